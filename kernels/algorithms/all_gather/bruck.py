"""Bruck all_gather: ceil(log2 p) steps at distances 1, 2, 4, ... for any p (no final rotation)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.phases import move_runs, node_order
from kernels.schedule import StepBuilder


@algorithm("bruck", "all_gather", sent=lambda pr, r: (pr.world - 1) * pr.block)
def bruck(problem: Problem, b: StepBuilder) -> None:
    """Member i sends what it holds to member i-d and receives from member i+d, d = 1, 2, 4, ...

    Ranks in node order; member i starts with its own block and after the step at distance d
    holds the blocks of members i, i+1, ..., i+2d-1 (mod p). At distance d it sends the first
    min(d, p-d) of them, so the last step of a non-power of two sends only what is missing.
    Blocks stay at their absolute positions in the output, so Bruck's final local rotation is
    not needed. Steps: ceil(log2 p). Elements sent per rank: (p-1) * n/p (the optimum).
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p, d = len(order), 1
    while d < p:
        st = b.step()
        for i, r in enumerate(order):
            mine = [blocks[order[(i + t) % p]] for t in range(min(d, p - d))]
            move_runs(b, r, order[(i - d) % p], mine, reduce=False, step=st)
        d *= 2
