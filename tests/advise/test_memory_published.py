"""advise's memory model term by term (bench/advise/memory.py, bench/training/stages.py), on
computed data: the stage forwards a pipeline rank holds at its peak per schedule, the layers
each stage holds under the balanced cut, the stage outputs a pipeline keeps unless its software
deallocates them, the per-layer bytes without dropout and under sequence parallelism, FP32
gradient accumulation beside a pipeline, and Llama 3 405B's published 8,192-GPU layout priced
without recomputation. gpt-tiny: 6 layers, width 32, 4 heads, sequence 16, vocabulary 64;
pieces embedding 2560, each layer 12704, head 2112 (tests/advise/test_zero2_pipeline.py)."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

S, H, A, V = 16, 32, 4, 64  # gpt-tiny
EMBED, LAYER, HEAD = 2560, 12704, 2112


def _tiny(**software: object):  # type: ignore[no-untyped-def]
    from bench.advise.shape import shape_of
    from bench.advise.software import Software
    from bench.models import MODELS

    return shape_of(MODELS.get("gpt-tiny")).under(Software(**software))  # type: ignore[arg-type]


@pytest.mark.parametrize(("schedule", "v", "want"), [
    ("gpipe", 1, [8, 8, 8, 8]),  # every forward before any backward
    ("1f1b", 1, [4, 3, 2, 1]),  # p - rank: the first stage holds p (Narayanan et al., 2.2.1)
    ("interleaved", 2, [11, 9, 7, 5]),  # (v - 1) p + 2 (p - 1 - rank) + 1
])
def test_stage_forwards_in_flight_per_schedule(schedule: str, v: int, want: list[int]) -> None:
    """p = 4, m = 8. Interleaved rank 0: 11 stage forwards of 2 per rank = p (1 + (p - 1) /
    (p v)) = 5.5 micro-batches' worth of its layers; with m = p every forward runs first."""
    from bench.training.stages import in_flight, peak_held

    assert [in_flight(schedule, 4, 8, v, r) for r in range(4)] == want
    assert in_flight("interleaved", 4, 4, 2, 0) == 8 and in_flight("1f1b", 4, 2, 1, 0) == 2
    assert [peak_held(schedule, 4, 8, v, r, (1.0,) * v) for r in range(4)] == want


def test_interleaved_peak_follows_the_schedule_order() -> None:
    """p = 2, m = 4, v = 2, rank 0: forwards in stage order 0 0 1 1, then forward 0 / backward 1,
    forward 0 / backward 1, forward 1 / backward 0, ...: held 2 w0 + 2 w1, then 3 w0 + 2 w1, then
    4 w0 + w1 (the peak when the first local stage weighs more)."""
    from bench.training.stages import peak_held

    assert peak_held("interleaved", 2, 4, 2, 0, (1, 10)) == 3 * 1 + 2 * 10
    assert peak_held("interleaved", 2, 4, 2, 0, (10, 1)) == 4 * 10 + 1


@pytest.mark.parametrize(("attention", "sp", "recompute", "per_sbh"), [
    ("flash", False, "none", 8 + 24 / 2),  # no dropout masks: 10 - 2 replicated
    ("flash", True, "none", 32 / 2),  # 34 - 2 under sequence parallelism
    ("materialized", False, "none", 8 + 24 / 2 + 2 * A * S / (H * 2)),  # softmax output only
    ("materialized", True, "full", 2 / 2),  # the layer input's s/t shard
])
def test_layer_bytes_without_dropout(attention: str, sp: bool, recompute: str,
                                     per_sbh: float) -> None:
    from bench.advise.memory import layer_activation_bytes
    from bench.advise.software import Software

    sw = Software(attention, sequence_parallel=sp, dropout=False)
    assert layer_activation_bytes(S, 3, H, A, 2, sw, recompute) == S * 3 * H * per_sbh


def test_each_rank_holds_its_own_stages_layers_and_outputs() -> None:
    """Four stages of gpt-tiny: the balanced cut leaves one layer beside the embedding and one
    beside the head, two in the middle stages. 1F1B, m = 8 micro-batches of 1: rank r holds
    (4 - r) x its layers x 34 s h bytes (16-bit, t = 1, flash; 2 of them dropout masks), its
    outputs 2 s h each but on the last stage, which holds the fp32 logits instead (the loss is
    computed there); rank 1 is the largest (3 x 2 layers > 4 x 1); deallocated outputs leave the
    layers only."""
    from bench.advise.layout import Layout
    from bench.advise.memory import layout_memory, stage_activations
    from bench.training.analytic import MIXED
    from bench.training.stages import stage_layers, stage_starts

    shape = _tiny()
    lay = Layout(pipeline=4, microbatches=8)
    assert stage_layers(stage_starts(shape.piece_sizes, 4), [0, 1, 2, 3], 6) == (1, 2, 2, 1)
    layer, out, logits = 34 * S * H, 2 * S * H, 4 * S * V
    got = [stage_activations(shape, lay, 8, MIXED, r) for r in range(4)]
    assert got == [4 * (layer + out), 3 * (2 * layer + out), 2 * (2 * layer + out),
                   1 * (layer + logits)]
    assert layout_memory(shape, lay, 8, MIXED).stage == 1
    freed = _tiny(deallocates_outputs=True)
    assert [stage_activations(freed, lay, 8, MIXED, r) for r in range(4)] == \
        [4 * layer, 6 * layer, 4 * layer, layer + logits]
    no_dropout = _tiny(deallocates_outputs=True, dropout=False)
    assert stage_activations(no_dropout, lay, 8, MIXED, 1) == 6 * 32 * S * H


def test_fp32_gradients_accumulate_whole_beside_a_pipeline() -> None:
    """zero2, data 2 x pipeline 2, 4-byte gradients (Llama 3's FP32 accumulation): stage 0
    (embedding + 3 layers = 40672 elements) holds its gradients whole, 4 bytes each; parameters
    2 bytes sharded and gathered whole, optimizer state 12 bytes sharded."""
    from bench.advise.layout import Layout
    from bench.advise.memory import states
    from bench.training.analytic import MIXED

    prec = dataclasses.replace(MIXED, grad_bytes=4)
    stage0 = EMBED + 3 * LAYER
    lay = Layout(data=2, pipeline=2, dp="zero2", microbatches=2)
    m = next(m for m in states(_tiny(), lay, 4, prec) if m.stage == 0)
    e = m.per_rank
    assert (e.params, e.transient, e.grads, e.optim) == \
        (stage0 // 2 * 2, stage0 * 2, stage0 * 4, stage0 // 2 * 12)


def test_llama3_405b_published_layout_fits_without_recomputation() -> None:
    """Llama 3 405B on 8,192 H100 (TP 8, PP 16, DP 64, 1F1B, micro-batches of one 8K
    sequence): pipeline rank 1 (8 layers, 15 in flight) is the largest: 3.19e9 local parameters
    (bf16, gathered whole), their FP32 gradients whole, optimizer state over 64, and 120 layer
    micro-batches of 32 s h / t bytes (no dropout, sequence parallel, flash, outputs freed):
    78.47 GiB (the block as it is: 8 key/value heads of 128, a SwiGLU MLP of 53,248), within
    the 81,559 MiB an H100 80GB HBM3 reports; rank 0 (the embedding and 7
    layers, 16 in flight) holds less; the logits are the last rank's (7 layers and the head, one
    micro-batch in flight)."""
    from bench.advise.evaluate import memory_of
    from bench.advise.layout import Layout
    from bench.advise.memory import stage_activations
    from benchmarks.published_runs import _question, is_published, runs

    run = next(r for r in runs() if r.name == "Llama3 405B 8192")
    q = _question(run)
    job = q.jobs()(32)
    lay = Layout(64, 8, 16, dp="zero2", microbatches=32)
    assert is_published(run, lay)
    mem = memory_of(job, lay)
    e, sbh_t = mem.per_rank, 8192 * 16384 // 8
    h, f, kv = 16384, 53248, 1024  # column-parallel weights and biases (q, k, v, gate, up) and
    # row-parallel weights over t = 8; the norms and row-parallel biases whole
    local = 8 * ((2 * h * h + 2 * kv * h + 3 * f * h + h + 2 * kv + 2 * f) // 8 + 6 * h)
    layer = 32 * sbh_t
    logits = 4 * 8192 * (128256 // 8)
    assert mem.stage == 1
    assert (e.grads, e.activations) == (4 * local, 15 * 8 * layer)
    assert stage_activations(job.shape, lay, 32, job.precision, 0) == 16 * 7 * layer
    assert stage_activations(job.shape, lay, 32, job.precision, 15) == 7 * layer + logits
    assert e.total <= job.memory_limit == 81559 * 2**20
