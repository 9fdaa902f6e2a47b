"""Bruck all_gather: ceil(log2 p) steps at distances 1, 2, 4, ... for any p (no final rotation)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS, Compiled, messages
from kernels.phases import move_runs, node_order
from kernels.schedule import StepBuilder


@lru_cache(maxsize=32)
def _generated(p: int) -> Compiled:
    """Bruck's messages with ranks numbered node by node: member i sends members i..i+t-1's
    blocks (t = min(d, p-d)) to i-d; a run that wraps past p is two messages, the low first
    (as move_runs merges them)."""
    i = np.arange(p)
    steps, d = [], 1
    while d < p:
        t = min(d, p - d)
        wrap = i + t > p
        w = i[wrap]
        src = np.concatenate((i, w))
        lo = np.concatenate((np.where(wrap, 0, i), w))
        hi = np.concatenate((np.where(wrap, i + t - p, i + t), np.full(len(w), p)))
        steps.append(messages(src, (src - d) % p, lo, hi, np.zeros(len(src)),
                              np.concatenate((np.zeros(p), np.ones(len(w))))))
        d *= 2
    return Compiled(p, p, tuple(steps))


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """Bruck's messages, generated per step (evaluated exactly)."""
    return x.need(equal=False, contiguous=True) or x.generates() or _generated(x.p)


@algorithm("bruck", "all_gather", shape=BLOCKS, closed=_closed, sent=all_but_own)
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
