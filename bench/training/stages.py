"""How a pipeline cuts a model into stages, without torch.distributed: the balanced split by
parameter count and which stages a rank holds. :mod:`bench.training.strategies.pipeline` runs
them, :mod:`bench.training.analytic` and :mod:`bench.advise` price them; importing this module
costs no torch.distributed (``python -X importtime``)."""

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
    per piece, >= 1 piece a group) minimising the largest group's sum (ties: earlier cuts)."""
    n = len(sizes)
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    @functools.cache
    def best(i: int, k: int) -> tuple[int, tuple[int, ...]]:
        """Best split of sizes[i:] into k groups: (largest sum, starts)."""
        if k == 1:
            return prefix[n] - prefix[i], (i,)
        out: tuple[int, tuple[int, ...]] | None = None
        for j in range(i + 1, n - k + 2):
            rest, starts = best(j, k - 1)
            cand = (max(prefix[j] - prefix[i], rest), (i, *starts))
            if out is None or cand[0] < out[0]:
                out = cand
        assert out is not None
        return out

    return (*best(0, stages)[1], n)


def piece_sizes(model: ModelSpec) -> tuple[int, ...]:
    """Parameters per piece (the model built on the meta device)."""
    return tuple(sum(p.numel() for p in piece.parameters()) for piece in model.build_meta().pieces)


def stage_pieces(starts: tuple[int, ...], stages: list[int]) -> frozenset[int]:
    """The pieces of ``stages`` under the cut ``starts`` (:func:`stage_starts`)."""
    return frozenset(i for s in stages for i in range(starts[s], starts[s + 1]))


def local_stages(per_rank: int, rank: int, world: int) -> list[int]:
    """The ``per_rank`` stages of ``rank``: rank, rank + world, ... (the interleaved layout)."""
    return [rank + k * world for k in range(per_rank)]


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
