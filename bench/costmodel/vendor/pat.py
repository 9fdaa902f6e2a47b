"""NCCL PAT (parallel aggregated trees, NCCL 2.23) for all_gather and reduce_scatter: a
Bruck-like schedule with a logarithmic number of network steps; NCCL runs it only with one
rank per node. Bandwidth: the ring's bound x 0.75 (NCCL's derating, src/graph/tuning.cc).
Latency (NCCL's form): base 8 us + log2(N) x (network hop 14 us / 3.5) + 2.8 us per rank.
"""

from __future__ import annotations

from bench.costmodel.vendor import ring
from bench.costmodel.vendor.base import US, Job, VendorAlgorithm

EFFICIENCY, BASE, HOP_NET, PER_RANK = 0.75, 8.0, 14.0, 2.8


def applies(job: Job, collective: str) -> str | None:
    return None if job.l == 1 and job.nodes > 1 else "PAT runs with one rank per node only"


def busbw(job: Job, collective: str) -> float:
    return EFFICIENCY * ring.busbw(job, collective)


def latency(job: Job, collective: str, proto: str) -> float:
    return (BASE + job.log2_nodes * HOP_NET / 3.5 + job.p * PER_RANK) * US


ALGORITHM = VendorAlgorithm("PAT", ("all_gather", "reduce_scatter"), ("Simple",), applies, busbw,
                            latency, order=6)
