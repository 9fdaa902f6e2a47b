"""The step's fixed and per-stage terms: the software's own time per micro-batch counted
exactly, full recomputation of the layers only, a large vocabulary's head weighing on the last
stage, and the pipeline cut each software makes (bench/advise/evaluate.py, shape.py)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench.advise.layout import Layout
from bench.advise.shape import custom_gpt, shape_of


def _job(device: dict[str, object], vocab: int = 50304, batch: int = 16):  # type: ignore[no-untyped-def]
    from bench.advise.question import Question
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import MIXED

    prof = load_profile("a100-ib200")
    prof = dataclasses.replace(prof, device={**prof.device, **device})
    shape = shape_of(custom_gpt(8, 1024, 16, 2048, vocab))
    return Question(shape, prof, parse_topology("1x8"), batch, MIXED).jobs()(batch)


@pytest.mark.parametrize(("pp", "m", "v", "schedule"), [(1, 1, 1, "1f1b"), (4, 16, 1, "1f1b"),
                                                        (2, 8, 2, "interleaved")])
def test_microbatch_overhead_counted_per_microbatch_and_stage(pp: int, m: int, v: int,
                                                              schedule: str) -> None:
    from bench.advise.evaluate import evaluate

    lay = Layout(data=8 // pp, pipeline=pp, microbatches=m, schedule=schedule, stages_per_rank=v)
    batch = 16 // lay.data
    base = evaluate(_job({}, batch=batch), lay).step
    got = evaluate(_job({"microbatch_overhead_s": 1e-3}, batch=batch), lay).step
    assert math.isclose(got.compute - base.compute, m * v * 1e-3)  # m micro-batches x v stages
    extra = (pp - 1) / v * (m * v * 1e-3) / m if pp > 1 else 0.0  # the bubble's share of it
    assert math.isclose(got.bubble - base.bubble, extra, abs_tol=1e-15)


def test_recomputation_reruns_the_layers_not_the_head() -> None:
    from bench.advise.achieved import piece_forward_s, stage_s
    from bench.advise.evaluate import evaluate

    job = _job({}, vocab=250880)
    plain = evaluate(job, Layout(data=8)).step.compute
    full = evaluate(job, Layout(data=8, checkpoint=True)).step.compute
    layers = frozenset(range(1, 9))
    again = stage_s(piece_forward_s, job.compute.eff, job.shape, 1, layers, 16)  # one micro-batch
    assert math.isclose(full - plain, again)


def test_large_vocabulary_head_makes_the_last_stage_the_slowest() -> None:
    from bench.advise.comm import CommContext, representative_stages

    job = _job({}, vocab=250880, batch=16)
    lay = Layout(data=2, pipeline=4, microbatches=8)
    stages = {pp: job.compute.seconds(CommContext(job.shape, lay, 8, pp=pp))
              for pp in representative_stages(job.shape, lay)}
    assert max(stages, key=stages.get) == 3  # the head's stage (a 250,880 x 1024 head)


def test_pipeline_cut_by_software() -> None:
    shape = shape_of(custom_gpt(8, 1024, 16, 2048, 250880))  # pieces: embedding, 8 layers, head
    from bench.advise.software import Software
    from bench.training.stages import stage_starts

    slots = shape.under(Software(pipeline_balance="layers+embeddings"))
    assert slots.cut_sizes == (1,) * 10
    assert stage_starts(slots.cut_sizes, 5) == (0, 2, 4, 6, 8, 10)  # two slots a stage
    layers = shape.under(Software(pipeline_balance="layers"))
    assert stage_starts(layers.cut_sizes, 4) == (0, 3, 5, 7, 10)  # 2 layers each, the
    # embedding with the first, the head with the last
    assert shape.cut_sizes == shape.piece_sizes  # the default: parameters
    with pytest.raises(ValueError, match="pipeline_balance"):
        Software(pipeline_balance="even")


def test_scatter_gather_sends_a_tensor_shard_and_gathers_it() -> None:
    """Megatron-LM's scatter/gather: each tensor rank sends 1/t of the boundary; the receiver
    all-gathers the whole over its tensor group; full recomputation does not issue it again."""
    from bench.advise.comm import Bytes, CommContext, pipeline_calls
    from bench.advise.software import Software
    from bench.advise.step import Priced, recomputed

    shape = shape_of(custom_gpt(8, 1024, 16, 2048, 50304))
    lay = Layout(data=1, tensor=4, pipeline=4, microbatches=8)
    whole = 2 * 2048 * 1024  # one sample's boundary, 16-bit
    plain = pipeline_calls(CommContext(shape, lay, 8, Bytes(2, 2, 2), pp=1))
    sg = pipeline_calls(CommContext(shape.under(Software(pipeline_scatter_gather=True)), lay, 8,
                                    Bytes(2, 2, 2), pp=1))
    assert {(c.op, c.nbytes) for c in plain} == {("send", whole), ("recv", whole)}
    assert sorted((c.op, c.nbytes, c.group, c.phase) for c in sg) == sorted([
        ("send", whole // 4, "pipeline", "forward"), ("recv", whole // 4, "pipeline", "backward"),
        ("all_gather", whole, "tensor", "backward"),
        ("recv", whole // 4, "pipeline", "forward"), ("send", whole // 4, "pipeline", "backward"),
        ("all_gather", whole, "tensor", "forward")])
    assert all(c.calls == 8 for c in sg)
    assert recomputed([Priced(c, 1.0, "ring", "ring") for c in sg]) == []
