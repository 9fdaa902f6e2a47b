"""Binomial-tree broadcast from any root (MPICH's short-message broadcast)."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import WHOLE
from kernels.phases import node_order
from kernels.schedule import Range, StepBuilder


def rooted_order(problem: Problem) -> list[int]:
    """Ranks node by node, rotated so the root comes first: position v is virtual rank v."""
    order = node_order(problem.topology)
    i = order.index(problem.root)
    return order[i:] + order[:i]


def children(v: int, p: int) -> int:
    """Children of virtual rank v in the binomial tree on p ranks: one per d = 2^k below the
    lowest set bit of v (every d for the root) with v + d < p."""
    return sum(1 for k in range(p.bit_length())
               if (v == 0 or (1 << k) < (v & -v)) and v + (1 << k) < p)


def _closed(x: Ctx) -> Estimate | str:
    """Rank u's data passes, from the largest d down to lowbit(u), through the holder h_d (u's
    bits above d), which spends step d on a send iff h_d + d < p: u is ready at the sum of
    C(d, n) over those steps; T is the latest u."""
    why = x.need(root0=True, pow2_l=True, leaves="pow2")
    if why:
        return why
    nb = x.n * x.e
    bits = [1 << i for i in range((x.p - 1).bit_length())]
    # p a power of two: every holder has its partner, and an odd u waits on every step
    u = np.arange(x.p) if x.p & (x.p - 1) else np.asarray([1 if x.p > 1 else 0])
    low = np.where(u == 0, 1, u & -u)
    ready = np.zeros(x.p)
    crossing = 0
    for d in bits:
        c, crosses = x.by_distance(d, nb, tree=True)
        crossing += crosses
        ready += np.where((d >= low) & ((u & ~(2 * d - 1)) + d < x.p), c, 0.0)
    return estimate(float(ready.max()), len(bits), len(bits) * nb, crossing * nb)


@algorithm("binomial", "broadcast", shape=WHOLE, closed=_closed,
           sent=lambda pr, r: pr.count * children(rooted_order(pr).index(r), pr.world))
def binomial(problem: Problem, b: StepBuilder) -> None:
    """Binomial tree from the root: the ranks holding the data double each step.

    ceil(log2 p) steps; in the step of distance d (halving from the largest power of two below
    p to 1), every virtual rank v that is a multiple of 2d sends the whole buffer to v + d.

    Elements sent per rank: n per child, i.e. n * #{d = 2^k < lowbit(v) : v + d < p} (the root:
    n * ceil(log2 p); leaves, half the ranks, send nothing). Virtual ranks are node by node from
    the root, so the far, early steps cross between nodes and the late ones stay inside.
    """
    order, whole = rooted_order(problem), Range(0, problem.count)
    p = len(order)
    d = (1 << (p - 1).bit_length()) // 2  # the largest power of two below p
    while d:
        st = b.step()
        for v in range(0, p - d, 2 * d):
            b.move(order[v], order[v + d], whole, reduce=False, step=st)
        d >>= 1
