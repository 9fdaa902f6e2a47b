"""Context parallelism in advise (Llama 3's all-gather based CP, arXiv 2407.21783, Section
3.3.2): the key/value all-gather and the reduce-scatter of their gradients per block, the rank's
chunk of compute and activations, the data group over data x context, the layout's ranks and
label, where the search offers context degrees, and that the search with them stays exact.
Exact quantities, computed."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

L, H, A, KV, S = 4, 64, 8, 2, 48  # a small GPT: head width 8, 2 key/value heads


def _shape(seq: int = S, **software: object):  # type: ignore[no-untyped-def]
    from bench.advise.shape import Shape, custom_gpt
    from bench.advise.software import Software
    from bench.training.analytic import parameters

    model = custom_gpt(L, H, A, seq, vocab=96)
    return Shape(model, tuple(parameters(model)), kv_heads=KV,
                 software=Software(**software))  # type: ignore[arg-type]


def test_context_calls_are_the_key_value_all_gather_and_its_reduce_scatter() -> None:
    from bench.advise.calls import Call
    from bench.advise.comm import Bytes, CommContext, context_calls, layout_calls
    from bench.advise.layout import Layout

    shape = _shape()
    lay = Layout(data=2, tensor=2, context=4, pipeline=2, dp="zero2", microbatches=3)
    ctx = CommContext(shape, lay, 6, Bytes(2, 2, 2), pp=0)  # stage 0: embedding + 2 blocks
    # micro-batch 2 x the whole sequence x 2 (K, V) x 1 key/value head per tensor rank x 8, 16-bit
    n = 2 * S * 2 * (KV // 2) * (H // A) * 2
    assert context_calls(ctx) == [Call("all_gather", n, 2 * 3, "context", "forward", False),
                                  Call("reduce_scatter", n, 2 * 3, "context", "backward", False)]
    assert [c for c in layout_calls(ctx) if c.group == "context"] == context_calls(ctx)
    # more tensor ranks than key/value heads: each holds one (replicated)
    wide = CommContext(shape, dataclasses.replace(lay, tensor=4, data=1), 6, Bytes(2, 2, 2))
    assert context_calls(wide)[0].nbytes == 2 * S * 2 * 1 * (H // A) * 2
    assert [c for c in layout_calls(CommContext(shape, dataclasses.replace(lay, context=1),
                                                6, Bytes(2, 2, 2))) if c.group == "context"] == []


def test_tensor_and_pipeline_calls_carry_the_chunk() -> None:
    from bench.advise.comm import Bytes, CommContext, pipeline_calls, tensor_calls
    from bench.advise.layout import Layout

    shape, b = _shape(), Bytes(2, 2, 2)
    one = Layout(tensor=2, pipeline=2, microbatches=2)
    four = dataclasses.replace(one, context=4)
    for calls in (tensor_calls, pipeline_calls):
        whole, chunk = calls(CommContext(shape, one, 4, b)), calls(CommContext(shape, four, 4, b))
        assert [c.nbytes for c in whole] == [4 * c.nbytes for c in chunk]
        assert [c.calls for c in whole] == [c.calls for c in chunk]


def test_compute_and_activations_are_the_ranks_chunk() -> None:
    from bench.advise.achieved import block_gemms
    from bench.advise.layout import Layout
    from bench.advise.memory import activations, gathered_kv_bytes
    from bench.training.analytic import MIXED

    shape = _shape()
    for piece in (1, L + 1):  # a block (Linears and attention), the head
        whole = sum(g.flops for g in block_gemms(shape, 2, piece, 3))
        assert sum(g.flops for g in block_gemms(shape, 2, piece, 3, 4)) == whole / 4
    # the chunk's queries against the whole sequence's keys: Q K^T is (s / c) x s x head width
    scores = [g for g in block_gemms(shape, 2, 1, 3, 4) if g.scores]
    assert [(g.m, g.n, g.k) for g in scores] == [(S // 4, S, H // A), (S // 4, H // A, S)]
    # the chunk's activations, and in each layer the other ranks' keys and values it gathered
    for lay in (Layout(tensor=2), Layout(tensor=2, pipeline=2, microbatches=4).recomputing("full")):
        cp = dataclasses.replace(lay, context=4)
        extra = L * gathered_kv_bytes(shape, cp, 8 // lay.microbatches)  # 0 under full recompute
        assert activations(shape, lay, 8, MIXED) == 4 * (activations(shape, cp, 8, MIXED) - extra)


def test_the_gathered_keys_and_values_are_held_for_backward_unless_recomputed() -> None:
    from bench.advise.layout import Layout
    from bench.advise.memory import gathered_kv_bytes

    shape, lay = _shape(), Layout(tensor=2, context=4)
    # 16-bit x micro-batch 2 x the other ranks' 48 - 12 positions x (K, V) x 1 head of 8 per rank
    assert gathered_kv_bytes(shape, lay, 2) == 2 * 2 * (S - S // 4) * 2 * 1 * (H // A) == 2304
    assert gathered_kv_bytes(shape, lay.recomputing("selective"), 2) == 2304  # the core's input
    assert gathered_kv_bytes(shape, lay.recomputing("full"), 2) == 0  # gathered again
    assert gathered_kv_bytes(shape, Layout(tensor=2), 2) == 0


def test_layout_ranks_groups_and_label() -> None:
    from bench.advise.layout import Layout

    lay = Layout(data=2, tensor=2, context=2, pipeline=2, dp="zero2", microbatches=2)
    assert lay.world == 16 and lay.replicas == 4
    assert lay.rank(dp=1, tp=1, pp=1, cp=1) == ((1 * 2 + 1) * 2 + 1) * 2 + 1  # tp, cp, dp, pp
    assert lay.group("context") == [0, 2]
    assert lay.group("data") == [0, 2, 4, 6]  # data x context: the ranks holding the same weights
    assert lay.group("pipeline") == [0, 8]
    assert lay.label == "dp=2 zero2 tp=2 cp=2 pp=2[1f1b,m=2]"
    assert Layout(context=4).label == "dp=1 ddp cp=4"  # gradients reduced over the 4
    assert Layout(context=1) == Layout()
    with pytest.raises(ValueError, match="context parallelism"):
        Layout(data=2, expert=2, context=2)


def test_context_degrees_are_offered_only_where_valid() -> None:
    from bench.advise.search import plain_layouts
    from bench.advise.space import Space

    model = _shape(seq=24).model
    assert Space(model, 16, 16, context_parallel=True).contexts() == [1, 2, 4]  # 2c | 24
    assert Space(model, 16, 16).contexts() == [1]  # software without context parallelism
    offered = {lay.context for lay, _ in plain_layouts(model, 16, 16, context_parallel=True)}
    assert offered == {1, 2, 4}
    assert {lay.context for lay, _ in plain_layouts(model, 16, 16)} == {1}
    from bench.models import MODELS  # a model without a sequence: none

    assert Space(MODELS.get("mlp"), 16, 16, context_parallel=True).contexts() == [1]


def test_search_with_context_parallelism_is_exact_and_leaves_cp1_unchanged() -> None:
    from bench.advise.question import Question
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import MIXED

    prof = load_profile("h100-ib400")
    shape = _shape(seq=256)
    on = dataclasses.replace(prof, device={**prof.device, "context_parallel": True})
    q_on, q_off = (Question(shape, p, parse_topology("2x8"), 16, MIXED) for p in (on, prof))
    full = q_on.answer(16)
    assert {r.layout.context for r in full.results} == {1, 2, 4, 8, 16}
    kept = q_on.answer(16, keep=12)
    assert [(r.layout, r.step.time) for r in kept.results] == \
        [(r.layout, r.step.time) for r in full.results[:12]]
    plain = [(r.layout, r.step.time, r.memory.total) for r in q_off.answer(16).results]
    assert [(r.layout, r.step.time, r.memory.total) for r in full.results
            if r.layout.context == 1] == plain
