"""Rabenseifner's AllReduce: recursive-halving reduce-scatter + recursive-doubling all-gather."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import POW2_BLOCKS
from kernels.phases import halve, span
from kernels.schedule import Range, StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """Power-of-two p: sum over d = p/2..1 of (C(d, d n/p) + γ d n/p), then over d = 1..p/2 of
    C(d, d n/p) (every rank of a step pays the same: :meth:`Ctx.by_distance`)."""
    why = x.need(pow2_p=True, leaves="pow2", divides=x.p)
    if why:
        return why
    t1, i1 = x.halving(x.b, reduce=True, down=True)
    t2, i2 = x.halving(x.b, reduce=False, down=False)
    lg = x.p.bit_length() - 1
    return estimate(t1 + t2, 2 * lg, 2 * (x.p - 1) * x.b, i1 + i2)


@algorithm("halving_doubling", shape=POW2_BLOCKS, closed=_closed)
def halving_doubling(problem: Problem, b: StepBuilder) -> None:
    """Recursive halving reduce-scatter then recursive doubling all-gather, for any p.

    Let p' be the largest power of two <= p and r = p - p'. If r > 0, a first step folds each of
    the first r even/odd pairs (in node order) into the odd rank, and a last step sends the result
    back to the even rank. The p' remaining ranks run log2(p') halving steps, each sending half of
    the range still held, then log2(p') doubling steps. Steps: 2*log2(p') (+2 if p is not a power
    of two). Bytes sent per rank: 2(p'-1)/p' * n, plus n for the ranks that fold in or send back.
    """
    order = [r for node in problem.topology.nodes() for r in node]
    p = len(order)
    if p == 1:
        return
    pp = 1 << (p.bit_length() - 1)
    rem = p - pp
    whole = Range(0, problem.count)
    if rem:
        st = b.step()
        for i in range(rem):
            b.move(order[2 * i], order[2 * i + 1], whole, reduce=True, step=st)
    real = [order[2 * v + 1] if v < rem else order[v + rem] for v in range(pp)]
    blocks = split(problem.count, pp)

    held = halve(b, real, blocks)  # block interval each virtual rank holds reduced
    d = 1
    while d < pp:
        st = b.step()
        for v in range(pp):
            b.move(real[v], real[v ^ d], span(blocks, *held[v]), reduce=False, step=st)
        held = [(min(held[v][0], held[v ^ d][0]), max(held[v][1], held[v ^ d][1])) for v in range(pp)]
        d *= 2
    if rem:
        st = b.step()
        for i in range(rem):
            b.move(order[2 * i + 1], order[2 * i], whole, reduce=False, step=st)
