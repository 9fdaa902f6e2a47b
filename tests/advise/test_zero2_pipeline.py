"""zero2 beside a pipeline, on computed data: gpt-tiny (6 layers, width 32, vocabulary 64,
sequence 16) at data 2 x pipeline 2, two micro-batches. Its pieces: the embedding
64 * 32 + 16 * 32 = 2560 elements, each layer 64 (ln1) + 4 * (32 * 32 + 32) (q, k, v, proj)
+ 64 (ln2) + (32 * 128 + 128) (fc) + (128 * 32 + 32) (proj) = 12704, the head 64 (ln_f)
+ 64 * 32 = 2112; stage 0 holds the embedding and three layers (40672), stage 1 three layers
and the head (40224)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

EMBED, LAYER, HEAD = 2560, 12704, 2112


def _tiny():  # type: ignore[no-untyped-def]
    from bench.advise.shape import shape_of
    from bench.models import MODELS

    return shape_of(MODELS.get("gpt-tiny"))


def _layout(dp: str, pipeline: int = 2):  # type: ignore[no-untyped-def]
    from bench.advise.layout import Layout

    return Layout(data=2, pipeline=pipeline, dp=dp, microbatches=2)


@pytest.mark.parametrize("pp, units", [(0, [EMBED, LAYER, LAYER, LAYER]),
                                       (1, [LAYER, LAYER, LAYER, HEAD])])
def test_zero2_beside_a_pipeline_gathers_and_reduces_each_unit_of_its_stage_once(
        pp: int, units: list[int]) -> None:
    """Per unit of the rank's stage, once per step (not per micro-batch): one all_gather in
    forward and one reduce_scatter in backward of its padded elements (4-byte elements; rows
    even here, so no padding); nothing else over the data group."""
    from bench.advise.comm import CommContext, layout_calls

    ctx = CommContext(_tiny(), _layout("zero2"), 4, pp=pp)
    data = [(c.op, c.nbytes, c.calls, c.phase, c.overlap) for c in layout_calls(ctx)
            if c.group == "data"]
    want = [x for n in units for x in (("all_gather", 4 * n, 1, "forward", True),
                                       ("reduce_scatter", 4 * n, 1, "backward", True))]
    assert data == want


def test_zero2_beside_a_pipeline_holds_its_accumulated_gradients_whole() -> None:
    """Mixed precision (2-byte parameters and gradients, K = 12), stage 0 the larger
    (40672 elements over d = 2): parameters sharded (20336 x 2), gathered copy whole
    (40672 x 2), gradients accumulated whole over the micro-batches (40672 x 2), optimizer
    state sharded (20336 x 12). Without a pipeline the gradients are sharded; ddp's and zero1's
    are whole either way (the rule changes nothing for them)."""
    from bench.advise.memory import states
    from bench.training.analytic import MIXED

    stage0 = EMBED + 3 * LAYER
    assert stage0 == 40672
    shape = _tiny()
    got = max(states(shape, _layout("zero2"), 4, MIXED), key=lambda m: m.per_rank.total)
    e = got.per_rank
    assert (got.stage, e.params, e.grads, e.transient, e.optim) == \
        (0, stage0 // 2 * 2, stage0 * 2, stage0 * 2, stage0 // 2 * 12)
    full = EMBED + 6 * LAYER + HEAD
    (alone,) = states(shape, _layout("zero2", pipeline=1), 4, MIXED)
    assert alone.per_rank.grads == full // 2 * 2
    for dp in ("ddp", "zero1"):
        m = next(m for m in states(shape, _layout(dp), 4, MIXED) if m.stage == 0)
        assert m.per_rank.grads == stage0 * 2 and m.per_rank.params == stage0 * 2


def test_search_offers_zero2_with_a_pipeline_and_zero3_without() -> None:
    from bench.advise.search import layouts

    got = {(lay.dp, lay.pipeline > 1) for lay, _ in layouts(_tiny().model, 4, 8)}
    assert ("zero2", True) in got and ("zero2", False) in got
    assert ("zero3", False) in got and ("zero3", True) not in got
