"""Bandwidth metrics, defined once, with nccl-tests' conventions so numbers compare.

algbw = S / t, with S the buffer size in bytes and GB = 1e9 bytes.
busbw = algbw * factor, the bandwidth each rank's busiest link must sustain for an optimal
algorithm on flat point-to-point hardware: AllReduce 2(p-1)/p, ReduceScatter and AllGather
(p-1)/p, Broadcast and Reduce 1. It assumes flat hardware; on hierarchical systems it is a
comparison number, not a link measurement.
"""

from __future__ import annotations

from collections.abc import Callable

BUSBW_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda p: 2 * (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "allgather": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_gbps(collective: str, world: int, nbytes: int, seconds: float) -> float:
    return algbw_gbps(nbytes, seconds) * BUSBW_FACTOR[collective](world)
