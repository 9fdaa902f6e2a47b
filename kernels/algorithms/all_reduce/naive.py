"""Naive AllReduce: gather-and-reduce at a root, then send the result back."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import INTER, INTRA, SPINE, Ctx, Estimate, estimate
from kernels.compiled import WHOLE
from kernels.schedule import Range, StepBuilder

ROOT = 0


def _closed(x: Ctx) -> Estimate | str:
    """Rank k sends the buffer to rank 0 in step k, which reduces it: sum of C(k -> 0) + γ nB;
    then rank 0 posts p-1 sends at once, the k-th costing o k + α + bytes / shared bandwidth."""
    p, nb, net = x.p, x.n * x.e, x.net
    if p == 1:
        return estimate(0.0, 0, 0, 0)
    if x.need(contiguous=True, leaves="uniform") is None:
        return _symmetric(x)
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


def _symmetric(x: Ctx) -> Estimate:
    """The same without per-rank arrays (equal nodes in node order, uniform leaves): rank 0's
    node holds l-1 peers, its leaf (L-1) l more, the rest (N-L) l; gathering one at a time,
    each alone on its path; sending back, the root's l-1 intra messages share its port, its
    p-l others its NIC share (and leaf 0's uplink, or the receiving leaf's downlink)."""
    p, l, nb, net, g = x.p, x.l, x.n * x.e, x.net, x.gamma * x.n * x.e  # noqa: E741
    L = x.L if x.leaves > 1 else x.N  # nodes per leaf
    n_intra, n_inter, n_spine = l - 1, (L - 1) * l, (x.N - L) * l
    share = net.rank_cap[0]
    gather = n_intra * (net.o + net.alpha[INTRA] + nb / net.beta[INTRA] + g) if l > 1 else 0.0
    if n_inter:
        gather += n_inter * (net.o + net.alpha[INTER] + nb / share + g)
    down = [net.o * n_intra + net.alpha[INTRA] + nb * n_intra / net.beta[INTRA]] if l > 1 else []
    cross = min(share / (p - l), net.node_cap / (p - l)) if p > l else 0.0
    if n_inter:
        down.append(net.o * (l * L - 1) + net.alpha[INTER] + nb / cross)
    if n_spine:
        gather += n_spine * (net.o + net.alpha[SPINE] + nb / min(share, net.up_cap[0]) + g)
        up = min(cross, net.up_cap[0] / max(n_spine, L * l))
        down.append(net.o * (p - 1) + net.alpha[SPINE] + nb / up)
    return estimate(gather + max(down), p, (p - 1) * nb, (p - l) * nb)


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
