"""van de Geijn broadcast: binomial scatter of p chunks, then ring all_gather (MPICH, long msgs)."""

from __future__ import annotations

import numpy as np

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.algorithms.broadcast.binomial import rooted_order
from kernels.chunks import split
from kernels.closed import INTER, Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled, messages
from kernels.phases import span
from kernels.schedule import StepBuilder


def _sent(problem: Problem, rank: int) -> int:
    p, n = problem.world, problem.count
    v = rooted_order(problem).index(rank)
    chunks = split(n, p)
    top = min(v + (v & -v), p) if v else p  # the scatter leaves chunks v..top-1 at v
    return span(chunks, v, top).size - chunks[v].size + n - chunks[(v + 1) % p].size


def _closed(x: Ctx) -> Estimate | str:
    """Binomial scatter (rank v ready at t_v: the hops of its bits, then its own sends), then
    p-1 ring steps: max over v of (t_v - δ_v (C_hi - C_lo)) + (p-1) C_hi, δ_v the hops from v
    to the nearest end of a dearest ring hop (ring hops of two costs: one leaf)."""
    why = x.need(root0=True, pow2_l=True, pow2_p=True, leaves="one", divides=x.p)
    if why:
        return why
    p, l, b = x.p, x.l, x.b  # noqa: E741
    if p == 1:
        return estimate(0.0, 0, 0, 0)
    bits = [1 << i for i in range(p.bit_length() - 1)]
    # ready and δ grow with v's set bits above its local index a = v mod l and depend on a
    # below: v = 0 and, per a, a with every higher bit set stand for all p ranks
    high = (p - 1) & ~(l - 1)
    v = np.arange(p) if l >= p else np.asarray([0, *(high | a for a in range(1, l))])
    low = np.where(v == 0, p, v & -v)
    ready, sc_inter = np.zeros(v.size), np.zeros(v.size)
    for d in bits:  # arrival at v: the hops of its bits; then v sends at every d < lowbit(v)
        c, crosses = x.by_distance(d, d * b, tree=True)
        ready += np.where(v & d, c, 0.0) + np.where(d < low, c, 0.0)
        sc_inter += np.where((d < low) & crosses, d * b, 0.0)
    costs = [c for c in (x.intra(b) if l > 1 else None, x.cross(INTER, b) if x.N > 1 else None)
             if c is not None]
    hi, lo = max(costs), min(costs)
    a = v % l
    delta = np.minimum(a, l - 1 - a) if len(costs) == 2 and hi > costs[0] else np.zeros(v.size)
    t = float((ready - delta * (hi - lo)).max()) + (p - 1) * hi
    ring_inter = np.where((a == l - 1) & (x.N > 1), (p - 1) * b, 0.0)
    return estimate(t, len(bits) + p - 1, 2 * (x.n * x.e - b), float((sc_inter + ring_inter).max()))


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (chunk v is atom v), generated: the scatter's steps (distance d:
    v sends atoms v+d .. min(v+2d, p)-1 to v+d, v a multiple of 2d), then the ring's (chunk x
    of the ring is atom x-1)."""
    order = np.asarray(rooted_order(pr), np.int64)
    p, steps = pr.world, []
    d = (1 << (p - 1).bit_length()) // 2
    while d:
        v = np.arange(0, p - d, 2 * d)
        steps.append(messages(order[v], order[v + d], v + d, np.minimum(v + 2 * d, p),
                              np.zeros(v.size, bool), np.zeros(v.size, np.int64)))
        d //= 2
    atom = ((np.arange(p) - 1) % p)[None, :]
    return Compiled(p, pr.count, (*steps, *rings.ring_steps(order[None, :], atom, True)))


@algorithm("scatter_allgather", "broadcast", sent=_sent, closed=_closed,
           shape=BLOCKS.generated(_generate))
def scatter_allgather(problem: Problem, b: StepBuilder) -> None:
    """Van de Geijn: binomial scatter of p chunks, then a ring all_gather of them.

    Binomial scatter of p near-equal chunks (virtual rank v gets chunk v) in ceil(log2 p)
    steps, then a ring all_gather of the chunks in p - 1 steps.

    Scatter: in the step of distance d (halving from the largest power of two below p), each v
    that is a multiple of 2d sends chunks v+d..min(v+2d, p)-1 to v + d. Elements sent per rank v:
    the scatter passes on what v received except its own chunk (the root: n - n/p), and the ring
    forwards every chunk but its successor's: (n - |chunk v+1|). About 2n at the root and n + n/p
    at most elsewhere, against n * log2 p for the binomial tree. Virtual ranks are node by node
    from the root; the ring follows them.
    """
    order, p = rooted_order(problem), problem.world
    chunks = split(problem.count, p)
    d = (1 << (p - 1).bit_length()) // 2
    while d:  # scatter: each v, a multiple of 2d, passes v + d the chunks v+d .. v+2d-1
        st = b.step()
        for v in range(0, p - d, 2 * d):
            b.move(order[v], order[v + d], span(chunks, v + d, min(v + 2 * d, p)), reduce=False,
                   step=st)
        d //= 2
    # ring all_gather: member v starts with chunk v, the ring's chunk v + 1
    rings.all_gather(b, order, [chunks[(x - 1) % p] for x in range(p)], rings.open_steps(b, p - 1))
