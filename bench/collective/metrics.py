"""Bandwidth metrics, defined once, with nccl-tests' conventions so numbers compare.

algbw = S / t, with S the size the collective reports (``Collective.size_is``: the buffer for
all_reduce, the output for all_gather, the input for reduce_scatter, ...) and GB = 1e9 bytes.
busbw = algbw * factor, the collective's ``busbw`` (all_reduce 2(p-1)/p; all_gather,
reduce_scatter and alltoall (p-1)/p; broadcast, reduce and sendrecv 1): the bandwidth each rank's
busiest link must sustain for an optimal algorithm on flat point-to-point hardware. On
hierarchical systems it is a comparison number, not a link measurement.
"""

from __future__ import annotations

from kernels.collective import resolve


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_factor(collective: str, world: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``collective`` (any alias) at ``world`` ranks."""
    return resolve(collective).busbw(world)


def busbw_gbps(collective: str, world: int, nbytes: int, seconds: float) -> float:
    return algbw_gbps(nbytes, seconds) * busbw_factor(collective, world)
