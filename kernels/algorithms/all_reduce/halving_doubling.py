"""Rabenseifner's AllReduce: recursive-halving reduce-scatter + recursive-doubling all-gather."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import POW2_BLOCKS, Compiled, CStep, messages
from kernels.phases import node_order, span
from kernels.schedule import StepBuilder


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


def _generate(pr: Problem) -> Compiled:
    """The build on p' atoms (block v is atom v), generated: every virtual rank's interval of
    blocks halved, then doubled, by numpy over all of them at once."""
    order = np.asarray(node_order(pr.topology), np.int64)
    p = order.size
    pp = 1 << (p.bit_length() - 1)
    rem, v = p - pp, np.arange(pp)
    real = np.where(v < rem, order[np.minimum(2 * v + 1, p - 1)], order[v + rem])
    lo, hi = np.zeros(pp, np.int64), np.full(pp, pp, np.int64)

    def step(src: np.ndarray, dst: np.ndarray, a: np.ndarray, b: np.ndarray, red: bool) -> CStep:
        return messages(src, dst, a, b, np.full(src.size, red), np.arange(src.size))

    pairs = order[:2 * rem].reshape(rem, 2).T  # the extra ranks, their keepers
    whole = (np.zeros(rem, np.int64), np.full(rem, pp, np.int64))
    steps = [step(pairs[0], pairs[1], *whole, True)] if rem else []
    d = pp // 2
    while d:
        mid, low = (lo + hi) // 2, v & d == 0
        steps.append(step(real, real[v ^ d], np.where(low, mid, lo), np.where(low, hi, mid), True))
        lo, hi, d = np.where(low, lo, mid), np.where(low, mid, hi), d // 2
    d = 1
    while d < pp:
        steps.append(step(real, real[v ^ d], lo, hi, False))
        lo, hi, d = np.minimum(lo, lo[v ^ d]), np.maximum(hi, hi[v ^ d]), d * 2
    if rem:
        steps.append(step(pairs[1], pairs[0], *whole, False))
    return Compiled(p, pr.count, tuple(steps))


@algorithm("halving_doubling", shape=POW2_BLOCKS.generated(_generate),
           closed=_closed)
def halving_doubling(problem: Problem, b: StepBuilder) -> None:
    """Recursive halving reduce-scatter then recursive doubling all-gather, for any p.

    Let p' be the largest power of two <= p and r = p - p'. If r > 0, a first step folds each of
    the first r even/odd pairs (in node order) into the odd rank, and a last step sends the result
    back to the even rank. The p' remaining ranks run log2(p') halving steps, each sending half of
    the range still held, then log2(p') doubling steps. Steps: 2*log2(p') (+2 if p is not a power
    of two). Bytes sent per rank: 2(p'-1)/p' * n, plus n for the ranks that fold in or send back.
    """
    order, p = node_order(problem.topology), problem.world
    pp = 1 << (p.bit_length() - 1)
    rem, blocks = p - pp, split(problem.count, pp)
    real = [order[2 * v + 1] if v < rem else order[v + rem] for v in range(pp)]  # v's rank
    lo, hi = [0] * pp, [pp] * pp  # v's interval of blocks
    if rem:  # each extra (even) rank folds its buffer into its odd partner
        st = b.step()
        for v in range(rem):
            b.move(order[2 * v], order[2 * v + 1], span(blocks, 0, pp), reduce=True, step=st)
    d = pp // 2
    while d:  # halving: keep the half on v's side of d, send the other to v xor d
        st = b.step()
        for v in range(pp):
            low, high = (lo[v], (lo[v] + hi[v]) // 2), ((lo[v] + hi[v]) // 2, hi[v])
            (lo[v], hi[v]), give = (low, high) if v & d == 0 else (high, low)
            b.move(real[v], real[v ^ d], span(blocks, *give), reduce=True, step=st)
        d //= 2
    d = 1
    while d < pp:  # doubling: swap the intervals with v xor d
        st = b.step()
        for v in range(pp):
            b.move(real[v], real[v ^ d], span(blocks, lo[v], hi[v]), reduce=False, step=st)
        lo, hi = ([min(lo[v], lo[v ^ d]) for v in range(pp)],
                  [max(hi[v], hi[v ^ d]) for v in range(pp)])
        d *= 2
    if rem:  # the result back to the extra ranks
        st = b.step()
        for v in range(rem):
            b.move(order[2 * v + 1], order[2 * v], span(blocks, 0, pp), reduce=False, step=st)
