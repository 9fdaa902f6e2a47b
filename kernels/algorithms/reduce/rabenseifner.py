"""Rabenseifner's reduce: recursive-halving reduce_scatter, then binomial gather to the root."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.broadcast.binomial import rooted_order
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import POW2_BLOCKS
from kernels.phases import span
from kernels.schedule import Range, StepBuilder


def _sent(problem: Problem, rank: int) -> int:
    n, pos = problem.count, rooted_order(problem).index(rank)
    pp = 1 << (problem.world.bit_length() - 1)
    rem = problem.world - pp
    if pos < 2 * rem and pos % 2:
        return n  # folded into its even neighbour
    v = pos // 2 if pos < 2 * rem else pos - rem
    blocks = split(n, pp)
    gather = span(blocks, v, v + (v & -v)).size if v else 0
    return n - blocks[v].size + gather


def _closed(x: Ctx) -> Estimate | str:
    """Recursive halving (as halving_doubling's first half), then a binomial gather in which
    the root receives at every d = 1..p/2 the d blocks of its partner: sum of C(d, d n/p)."""
    why = x.need(root0=True, pow2_l=True, pow2_p=True, leaves="pow2", divides=x.p)
    if why:
        return why
    b = x.b
    t, inter = x.halving(b, reduce=True, down=True)
    t += sum(x.by_distance(1 << i, (1 << i) * b, tree=True)[0] for i in range(x.p.bit_length() - 1))
    half = x.p // 2
    last = half * b if half >= x.l and x.p > 1 else 0.0
    sent = (x.p - 1) * b + (half * b if x.p > 1 else 0)
    return estimate(t, 2 * (x.p.bit_length() - 1), sent, inter + last)


@algorithm("rabenseifner", "reduce", sent=_sent, shape=POW2_BLOCKS, closed=_closed)
def rabenseifner(problem: Problem, b: StepBuilder) -> None:
    """Fold to a power of two, recursive-halving reduce_scatter, binomial gather: any p.

    Let p' be the largest power of two <= p and r = p - p'. Ranks are node by node from the root.
    If r > 0, a first step folds odd position 2i+1 into even position 2i (i < r), which leaves p'
    virtual ranks (virtual 0 is the root). log2(p') halving steps: v exchanges half of the blocks
    it still holds (of p' blocks of n/p') with v ^ d, d = p'/2 .. 1, and ends with block v
    reduced. log2(p') gather steps: at distance d = 1, 2, ..., v with lowbit(v) = d sends blocks
    v..v+d-1 to v - d. Steps: 2*log2(p') (+1 if p is not a power of two). Elements sent per rank:
    n - n/p' in the halving plus, for v > 0, lowbit(v) * n/p' in the gather (blocks rounded to
    whole elements): at most 1.5n - n/p' (v = p'/2), n - n/p' at the root; folded ranks send n.
    """
    order = rooted_order(problem)
    p = len(order)
    pp = 1 << (p.bit_length() - 1)
    rem = p - pp
    if rem:
        st = b.step()
        for i in range(rem):
            b.move(order[2 * i + 1], order[2 * i], Range(0, problem.count), reduce=True, step=st)
    real = [order[2 * v] if v < rem else order[v + rem] for v in range(pp)]
    blocks = split(problem.count, pp)
    held = [(0, pp) for _ in range(pp)]  # halving: v gives up half its block interval to v ^ d
    d = pp // 2
    while d:
        st = b.step()
        for v in range(pp):
            lo, hi = held[v]
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if v & d == 0 else ((mid, hi), (lo, mid))
            b.move(real[v], real[v ^ d], span(blocks, *give), reduce=True, step=st)
            held[v] = keep
        d //= 2  # virtual rank v ends with block v reduced
    d = 1
    while d < pp:
        st = b.step()
        for v in range(d, pp, 2 * d):
            b.move(real[v], real[v - d], span(blocks, v, v + d), reduce=False, step=st)
        d *= 2
