"""Binomial-tree reduce to any root (MPICH's short-message reduce)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.broadcast.binomial import rooted_order
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import WHOLE
from kernels.schedule import Range, StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """The root receives at every step d = 1, 2, ... < p: sum of (C(d, n) + γ n)."""
    why = x.need(root0=True, pow2_l=True, leaves="pow2")
    if why:
        return why
    nb = x.n * x.e
    steps = [x.by_distance(1 << i, nb, tree=True) for i in range((x.p - 1).bit_length())]
    t = sum(c + x.gamma * nb for c, _ in steps)
    return estimate(t, len(steps), nb * (x.p > 1), nb * any(cr for _, cr in steps))


@algorithm("binomial", "reduce", shape=WHOLE, closed=_closed,
           sent=lambda pr, r: 0 if r == pr.root else pr.count)
def binomial(problem: Problem, b: StepBuilder) -> None:
    """Binomial tree to the root: subtrees' sums travel distance 1, 2, 4, ...

    ceil(log2 p) steps; in the step of distance d (1, 2, 4, ...), every virtual rank v with
    v mod 2d = d sends its buffer, already holding its subtree's sum, to v - d, which reduces it in.

    Elements sent per rank: n, except the root, which sends nothing; the root receives
    ceil(log2 p) buffers. Virtual ranks are node by node from the root (the mirror image of the
    binomial broadcast), so the early steps stay inside nodes.
    """
    order, whole = rooted_order(problem), Range(0, problem.count)
    p, d = len(order), 1
    while d < p:
        st = b.step()
        for v in range(d, p, 2 * d):
            b.move(order[v], order[v - d], whole, reduce=True, step=st)
        d *= 2
