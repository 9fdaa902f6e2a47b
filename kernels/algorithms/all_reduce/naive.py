"""Naive AllReduce: gather-and-reduce at a root, then send the result back."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import INTRA, SPINE, Ctx, Estimate, estimate
from kernels.compiled import WHOLE
from kernels.schedule import Range, StepBuilder

ROOT = 0


def _closed(x: Ctx) -> Estimate | str:
    """Rank k sends the buffer to rank 0 in step k, which reduces it: sum of C(k -> 0) + γ nB;
    then rank 0 posts p-1 sends at once, the k-th costing o k + α + bytes / shared bandwidth."""
    p, nb, net = x.p, x.n * x.e, x.net
    if p == 1:
        return estimate(0.0, 0, 0, 0)
    k = np.arange(1, p)
    zero = np.zeros_like(k)
    cls = net.cls(k, zero)
    alone = np.minimum(np.minimum(net.rank_cap[k], net.rank_cap[0]), net.node_cap)
    lk, l0 = net.leaf[k], net.leaf[0]
    alone = np.where(cls == SPINE, np.minimum(alone, np.minimum(net.up_cap[lk], net.up_cap[l0])),
                     alone)
    alone = np.where(cls == INTRA, net.beta[INTRA], alone)
    gather = net.o + net.alpha[cls] + nb / alone + x.gamma * nb  # one message per step
    down = net.o * k + net.alpha[cls] + nb / net.rates(zero, k, cls)
    return estimate(float(gather.sum() + down.max()), p, (p - 1) * nb,
                    int((cls != INTRA).sum()) * nb)


@algorithm("naive", shape=WHOLE, closed=_closed)
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
