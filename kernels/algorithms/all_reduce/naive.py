"""Naive AllReduce: gather-and-reduce at a root, then send the result back."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.schedule import Range, StepBuilder

ROOT = 0


@algorithm("naive")
def naive(problem: Problem, b: StepBuilder) -> None:
    """Every rank sends its buffer to rank 0, which reduces and sends the result back: p steps.

    Steps 1..p-1: rank k sends its whole buffer to the root, which reduces it in (one receive per
    step, since a step never writes an element twice). Step p: the root sends the result to all.
    Bytes sent per rank: (p-1)*n at the root, n elsewhere. The baseline every real algorithm beats.
    """
    p, whole = problem.world, Range(0, problem.count)
    if p == 1:
        return
    for k in range(1, p):
        b.move(k, ROOT, whole, reduce=True, step=b.step())
    st = b.step()
    for k in range(1, p):
        b.move(ROOT, k, whole, reduce=False, step=st)
