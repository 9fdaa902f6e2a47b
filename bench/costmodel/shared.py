"""Flows of different communicators on one link: they share its bandwidth.

A communicator that sends ``nbytes`` over a link of ``bytes_per_s`` alone in time ``alone_s``
takes, with ``flows`` equal flows on that link at once (each alive as long as it), the bandwidth
term ``flows`` times over:

    together = alone + (flows - 1) * nbytes / bytes_per_s

the latency and software parts of ``alone`` unchanged. It is the per-step rule of
:mod:`bench.costmodel.net` (a resource's capacity over its concurrent flows) applied across
communicators; benchmarks/concurrency.py holds it against the testbed's shared link."""

from __future__ import annotations


def together_s(alone_s: float, nbytes: float, bytes_per_s: float, flows: int) -> float:
    """The time beside ``flows - 1`` other equal flows on one link of ``bytes_per_s``."""
    if flows < 1 or bytes_per_s <= 0:
        raise ValueError(f"flows must be >= 1 and bytes_per_s > 0, got {flows}, {bytes_per_s}")
    return alone_s + (flows - 1) * nbytes / bytes_per_s


def slowdown(alone_s: float, nbytes: float, bytes_per_s: float, flows: int) -> float:
    """``together_s`` over ``alone_s``."""
    return together_s(alone_s, nbytes, bytes_per_s, flows) / alone_s
