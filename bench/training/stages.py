"""How a pipeline cuts a model into stages, without torch.distributed: the balanced split by
parameter count and which stages a rank holds."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from bench.models.base import ModelSpec

Schedule = Literal["gpipe", "1f1b", "interleaved"]  # torch's pipeline schedules the pipeline runs
SCHEDULES: tuple[str, ...] = get_args(Schedule)


@functools.cache
def stage_starts(sizes: tuple[int, ...], stages: int) -> tuple[int, ...]:
    """First piece of each stage, then ``len(sizes)``: contiguous groups of ``sizes`` (parameters
    per piece, >= 1 piece a group) minimising the largest group's sum (ties: earlier cuts).

    Bottom up over the number of groups k: the best split of ``sizes[i:]`` into k groups cuts at
    the first j > i minimising max(sum of sizes[i:j], the best of sizes[j:] into k - 1), all i
    at once (exact integers)."""
    import numpy as np  # here: importing this module stays light

    n = len(sizes)
    if not 1 <= stages <= n:
        raise ValueError(f"{n} pieces cannot make {stages} stages")
    prefix = np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))))
    worst = np.iinfo(np.int64).max
    span = prefix[None, :] - prefix[:-1, None]  # [i, j]: sum of sizes[i:j]
    i, j = np.arange(n)[:, None], np.arange(n + 1)[None, :]
    best = prefix[n] - prefix[:-1]  # k = 1: the rest in one group
    cuts = []
    for k in range(2, stages + 1):
        ok = (j > i) & (j <= n - k + 1)
        cand = np.where(ok, np.maximum(span, np.append(best, worst)[None, :]), worst)
        cut = cand.argmin(axis=1)  # the first minimum: the earliest cut
        cuts.append(cut)
        best = cand[np.arange(n), cut]
    out, at = [0], 0
    for cut in reversed(cuts):
        at = int(cut[at])
        out.append(at)
    return (*out, n)


def piece_sizes(model: ModelSpec) -> tuple[int, ...]:
    """Parameters per piece (:func:`bench.training.analytic.parameters`)."""
    from bench.training.analytic import numel, parameters

    out = [0] * model.num_pieces
    for p in parameters(model):
        out[p.piece] += numel(p.shape)
    return tuple(out)


def stage_pieces(starts: tuple[int, ...], stages: list[int]) -> frozenset[int]:
    """The pieces of ``stages`` under the cut ``starts`` (:func:`stage_starts`)."""
    return frozenset(i for s in stages for i in range(starts[s], starts[s + 1]))


def local_stages(per_rank: int, rank: int, world: int) -> list[int]:
    """The ``per_rank`` stages of ``rank``: rank, rank + world, ... (the interleaved layout)."""
    return [rank + k * world for k in range(per_rank)]


@functools.lru_cache(maxsize=65536)
def rank_pieces(sizes: tuple[int, ...], per_rank: int, rank: int, world: int) -> frozenset[int]:
    """The pieces of pipeline rank ``rank``'s stages (:func:`local_stages`) under the balanced cut
    of ``sizes`` into ``world * per_rank`` stages."""
    return stage_pieces(stage_starts(sizes, world * per_rank), local_stages(per_rank, rank, world))


def check_pipeline(ranks: int, per_rank: int, schedule: str, microbatches: int, pieces: int,
                   batch: int) -> None:
    """Raise ValueError (one line) when ``ranks`` ranks of ``per_rank`` stages cannot run
    ``schedule`` on a model of ``pieces`` pieces with ``batch`` samples per replica."""
    if ranks * per_rank > pieces:
        raise ValueError(f"{ranks * per_rank} pipeline stages exceed the model's {pieces} pieces")
    if schedule == "interleaved" and per_rank < 2:
        raise ValueError("interleaved 1F1B needs stages_per_rank >= 2")
    if schedule != "interleaved" and per_rank != 1:
        raise ValueError(f"{schedule} runs one stage per rank (stages_per_rank: 1)")
    if schedule == "interleaved" and microbatches % ranks:
        raise ValueError(f"interleaved 1F1B needs microbatches ({microbatches}) to be a "
                         f"multiple of the world size")
    if batch % microbatches:
        raise ValueError(f"batch_size {batch} is not a multiple of microbatches {microbatches}")


def in_flight(schedule: str, ranks: int, microbatches: int, per_rank: int, rank: int) -> int:
    """Micro-batch stages whose activations ``rank`` holds at its peak (the forwards run before
    their backwards free them), as torch.distributed.pipelining (2.13, schedules.py) orders them.
    GPipe: every micro-batch's forward before any backward, ``m``. 1F1B: ``Schedule1F1B`` warms
    up ``min(m, p - rank)`` forwards, then alternates one backward with one forward: the first
    stage holds p (Narayanan et al. SC21, Section 2.2.1). Interleaved 1F1B: ``_get_warmup_ops``
    warms up ``(v - 1) p + 2 (p - 1 - rank)`` stage-forwards (capped at the ``m v`` there are),
    then each steady step runs one forward before one backward: one more at the peak (Megatron-LM's
    interleaved schedule warms up the same count, megatron/core/pipeline_parallel/schedules.py).
    On rank 0 that is p (1 + (p - 1) / (p v)) micro-batches' worth of its layers."""
    if schedule == "gpipe":
        return microbatches
    if schedule == "1f1b":
        return min(microbatches, ranks - rank)
    return min(microbatches * per_rank, _interleaved_warmup(ranks, per_rank, rank) + 1)


def _interleaved_warmup(ranks: int, per_rank: int, rank: int) -> int:
    """Stage forwards interleaved 1F1B runs on ``rank`` before its first backward (torch's
    ``_get_warmup_ops``, uncapped)."""
    return (per_rank - 1) * ranks + 2 * (ranks - 1 - rank)


def peak_held(schedule: str, ranks: int, microbatches: int, per_rank: int, rank: int,
              weights: tuple[float, ...]) -> float:
    """The most ``rank`` holds at once of ``weights`` (one per local stage: what a stage forward
    keeps for its backward), its stage forwards run and freed in :func:`in_flight`'s order.
    Interleaved 1F1B runs its stages' forwards p micro-batches at a time, cycling the local
    stages, and its backwards likewise from the last local stage (torch's
    ``forward_stage_index`` / ``backward_stage_index``; Megatron-LM's ``get_model_chunk_id``);
    its peak is found step by step, as the stages' weights differ."""
    if schedule != "interleaved":
        return in_flight(schedule, ranks, microbatches, per_rank, rank) * sum(weights)
    total = microbatches * per_rank
    warm = min(total, _interleaved_warmup(ranks, per_rank, rank))
    held = peak = 0.0
    for k in range(total):
        held += weights[(k // ranks) % per_rank]
        peak = max(peak, held)
        if k >= warm:  # steady state: each forward's backward follows it
            held -= weights[per_rank - 1 - ((k - warm) // ranks) % per_rank]
    return peak


def stage_layers(starts: tuple[int, ...], stages: list[int], layers: int) -> tuple[int, ...]:
    """The transformer layers (pieces 1..``layers``: the embedding is piece 0, the head the
    last) each of ``stages`` holds under the cut ``starts``: the balanced split by parameters
    leaves the stages holding the embedding or the head fewer layers (what the Llama 3 paper,
    arXiv 2407.21783 Section 3.3.2, does by hand: one layer fewer on the first and last stage)."""
    return tuple(max(0, min(starts[s + 1], layers + 1) - max(starts[s], 1)) for s in stages)
