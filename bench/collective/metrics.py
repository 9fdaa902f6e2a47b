"""Bandwidth metrics with nccl-tests' conventions, so numbers compare: docs/measuring.md,
"Bandwidth: algbw and busbw"."""

from __future__ import annotations

from kernels.collective import resolve


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_factor(collective: str, world: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``collective`` (any alias) at ``world`` ranks."""
    return resolve(collective).busbw(world)


def busbw_gbps(collective: str, world: int, nbytes: int, seconds: float) -> float:
    return algbw_gbps(nbytes, seconds) * busbw_factor(collective, world)
