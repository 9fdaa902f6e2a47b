"""Direct all_gather: one step in which every rank sends its block to every other rank."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.phases import node_order
from kernels.schedule import StepBuilder


@algorithm("direct", "all_gather", sent=lambda pr, r: (pr.world - 1) * pr.block)
def direct(problem: Problem, b: StepBuilder) -> None:
    """One step: member i sends its block to members i+1, i+2, ..., i+p-1 (mod p), in that order.

    Ranks in node order; the staggered order spreads the first messages over all receivers.
    Every rank posts p-1 sends and p-1 receives at once: latency-bound sizes gain, large ones
    meet incast. Elements sent per rank: (p-1) * n/p.
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p = len(order)
    if p == 1:
        return
    st = b.step()
    for i, r in enumerate(order):
        for s in range(1, p):
            b.move(r, order[(i + s) % p], blocks[r], reduce=False, step=st)
