"""Ring AllReduce: reduce-scatter ring, then all-gather ring (Patarasuk & Yuan; NCCL's ring)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.schedule import StepBuilder


@algorithm("ring")
def ring(problem: Problem, b: StepBuilder) -> None:
    """Reduce-scatter ring then all-gather ring over p chunks: 2(p-1) steps.

    Bytes sent per rank: 2(p-1)/p * n (exactly: twice the sum of the p-1 chunks it forwards, each
    chunk n/p rounded to whole elements). Ranks are ordered node by node, so the ring crosses
    between nodes only once per node.
    """
    members = [r for node in problem.topology.nodes() for r in node]
    p = len(members)
    chunks = split(problem.count, p)
    rings.reduce_scatter(b, members, chunks, rings.open_steps(b, p - 1))
    rings.all_gather(b, members, chunks, rings.open_steps(b, p - 1))
