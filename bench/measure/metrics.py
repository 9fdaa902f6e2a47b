"""Bandwidth metrics with nccl-tests' conventions, so numbers compare: docs/measuring.md,
"Bandwidth: algbw and busbw"."""

from __future__ import annotations

from kernels.collective import resolve


def algbw_gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw_gbps(collective: str, world: int, nbytes: int, seconds: float) -> float:
    """algbw times nccl-tests' bus-bandwidth factor of ``collective`` (any alias)."""
    return algbw_gbps(nbytes, seconds) * resolve(collective).busbw(world)
