"""Closed forms of the power-of-two algorithms: halving-doubling, recursive doubling and
halving, binomial trees, Rabenseifner, scatter + ring.

With p, l and L powers of two and ranks in node order, the partner d places away is on the same
node iff d < l (and under the same leaf iff d < lL), for every rank at once: every rank of a
step pays the same, so the steps add up (:meth:`Ctx.by_distance`). Binomial trees send one
message per rank and step, and the senders of one step sit on different nodes once d >= l.

Hot sends (h per byte a sender wrote earlier in the call, :mod:`bench.costmodel.cost`): halving
sends, after its first step, half of what it reduced the step before; doubling sends what it
reduced or gathered, except, in all_gather, the rank's own block; a binomial tree's forwarders
send what they received or reduced, its root and leaves only their input. Every rank of a step
pays the same h bytes, so they add to the step as the rest does.
"""

from __future__ import annotations

import numpy as np

from bench.costmodel.closed import Ctx, closed, estimate
from bench.costmodel.cost import Estimate


def _halving(x: Ctx, block_bytes: float, reduce: bool, down: bool,
             cold: int | None = None) -> tuple[float, float]:
    """log2 p steps exchanging d blocks with the partner d away (d = p/2..1 if ``down``, else
    1..p/2): their time and the bytes sent across nodes by each rank. Hot sends: every block
    but ``cold`` blocks of each step (None: the first step is all cold, the others all hot)."""
    t = inter = 0.0
    ds = [1 << i for i in range(x.p.bit_length() - 1)]
    for i, d in enumerate(reversed(ds) if down else ds):
        c, crosses = x.by_distance(d, d * block_bytes, reduce)
        clean = (d if i == 0 else 0) if cold is None else cold
        t += c + x.hot * (d - clean) * block_bytes
        inter += d * block_bytes if crosses else 0.0
    return t, inter


def _pow2_need(x: Ctx, divides: int = 1) -> str | None:
    return x.need(pow2_p=True, leaves="pow2", divides=divides, hot=True)


@closed("all_reduce", "halving_doubling")
def halving_doubling(x: Ctx) -> Estimate | str:
    """sum over d = p/2..1 of (C(d, d n/p) + γ d n/p), then over d = 1..p/2 of C(d, d n/p)."""
    why = _pow2_need(x, divides=x.p)
    if why:
        return why
    b = x.n // x.p * x.e
    t1, i1 = _halving(x, b, reduce=True, down=True)
    t2, i2 = _halving(x, b, reduce=False, down=False, cold=0)  # all reduced: hot
    lg = x.p.bit_length() - 1
    return estimate(t1 + t2, 2 * lg, 2 * (x.p - 1) * b, i1 + i2)


@closed("all_gather", "recursive_doubling")
def recursive_doubling(x: Ctx) -> Estimate | str:
    """sum over d = 1..p/2 of C(d, d B): the blocks of an aligned group travel as one message."""
    why = _pow2_need(x) or x.need(contiguous=True, hot=True)
    if why:
        return why
    b = x.n // x.p * x.e
    t, inter = _halving(x, b, reduce=False, down=False, cold=1)  # its own block is cold
    return estimate(t, x.p.bit_length() - 1, (x.p - 1) * b, inter)


@closed("reduce_scatter", "recursive_halving")
def recursive_halving(x: Ctx) -> Estimate | str:
    """sum over d = p/2..1 of (C(d, d B) + γ d B)."""
    why = _pow2_need(x) or x.need(contiguous=True, hot=True)
    if why:
        return why
    b = x.n // x.p * x.e
    t, inter = _halving(x, b, reduce=True, down=True)
    return estimate(t, x.p.bit_length() - 1, (x.p - 1) * b, inter)


def _tree_need(x: Ctx, hot: bool = True) -> str | None:
    if x.problem.root != 0:
        return "root other than rank 0"
    return x.need(pow2_l=True, leaves="pow2", hot=hot)


def _tree_step(x: Ctx, d: int, nbytes: float) -> tuple[float, bool]:
    """One binomial step at distance d: one message per sender, senders on different nodes
    (and leaves) once they cross, so every flow is alone on its resources."""
    if d < x.l:
        return x.intra(nbytes), False
    if x.leaves > 1 and d >= x.l * x.L:
        return x.cross(2, nbytes), True
    return x.cross(1, nbytes), True


@closed("broadcast", "binomial")
def binomial_broadcast(x: Ctx) -> Estimate | str:
    """Rank u's data passes, from the largest d down to lowbit(u), through the holder h_d (u's
    bits above d), which spends step d on a send iff h_d + d < p: u is ready at the sum of
    C(d, n) over those steps; T is the latest u."""
    why = _tree_need(x)
    if why:
        return why
    nb = x.n * x.e
    bits = [1 << i for i in range((x.p - 1).bit_length())]
    u = np.arange(x.p)
    low = np.where(u == 0, 1, u & -u)
    ready = np.zeros(x.p)
    crossing = 0
    for d in bits:
        c, crosses = _tree_step(x, d, nb)
        crossing += crosses
        holder = u & ~(2 * d - 1)  # the root sends its input; the others what they received
        ready += np.where((d >= low) & (holder + d < x.p), c + x.hot * nb * (holder > 0), 0.0)
    return estimate(float(ready.max()), len(bits), len(bits) * nb, crossing * nb)


@closed("reduce", "binomial")
def binomial_reduce(x: Ctx) -> Estimate | str:
    """The root receives at every step d = 1, 2, ... < p: sum of (C(d, n) + γ n), + h n from
    every sender but rank 1 (the others reduced their children's first)."""
    why = _tree_need(x)
    if why:
        return why
    nb = x.n * x.e
    bits = [1 << i for i in range((x.p - 1).bit_length())]
    steps = [_tree_step(x, d, nb) for d in bits]
    t = sum(c + x.gamma * nb + x.hot * nb * (d > 1) for d, (c, _) in zip(bits, steps))
    return estimate(t, len(bits), nb * (x.p > 1), nb * any(cr for _, cr in steps))


@closed("reduce", "rabenseifner")
def rabenseifner(x: Ctx) -> Estimate | str:
    """Recursive halving (as halving_doubling's first half), then a binomial gather in which
    the root receives at every d = 1..p/2 the d blocks of its partner: sum of C(d, d n/p)."""
    why = _tree_need(x) or _pow2_need(x, divides=x.p)
    if why:
        return why
    b = x.n // x.p * x.e
    t, inter = _halving(x, b, reduce=True, down=True)
    ds = [1 << i for i in range(x.p.bit_length() - 1)]
    gather = [_tree_step(x, d, d * b) for d in ds]
    t += sum(c + x.hot * d * b for d, (c, _) in zip(ds, gather))  # reduced or gathered: hot
    half = x.p // 2
    last = half * b if half >= x.l and x.p > 1 else 0.0
    sent = (x.p - 1) * b + (half * b if x.p > 1 else 0)
    return estimate(t, 2 * (x.p.bit_length() - 1), sent, inter + last)


@closed("broadcast", "scatter_allgather")
def scatter_allgather(x: Ctx) -> Estimate | str:
    """Binomial scatter (rank v ready at t_v: the hops of its bits, then its own sends), then
    p-1 ring steps: max over v of (t_v - δ_v (C_hi - C_lo)) + (p-1) C_hi, δ_v the hops from v
    to the nearest end of a dearest ring hop (ring hops of two costs: one leaf)."""
    why = _tree_need(x) or x.need(pow2_p=True, leaves="one", divides=x.p, hot=True)
    if why:
        return why
    p, l, b = x.p, x.l, x.n // x.p * x.e  # noqa: E741
    if p == 1:
        return estimate(0.0, 0, 0, 0)
    bits = [1 << i for i in range(p.bit_length() - 1)]
    v = np.arange(p)
    low = np.where(v == 0, p, v & -v)
    ready = np.zeros(p)
    sc_inter = np.zeros(p)
    for d in bits:  # arrival at v: the hops of its bits; then v sends at every d < lowbit(v)
        c, crosses = _tree_step(x, d, d * b)
        hot = x.hot * d * b  # what a rank other than the root forwards
        ready += np.where(v & d, c + hot * ((v & ~(2 * d - 1)) > 0), 0.0)
        ready += np.where(d < low, c + hot * (v > 0), 0.0)
        sc_inter += np.where((d < low) & crosses, d * b, 0.0)
    cin = x.intra(b) if l > 1 else None
    cx = x.cross(1, b) if x.N > 1 else None
    hi, lo = max(c for c in (cin, cx) if c is not None), min(c for c in (cin, cx) if c is not None)
    a = v % l
    two = cx is not None and cin is not None and cx > cin
    delta = np.minimum(a, l - 1 - a) if two else np.zeros(p)  # hops to the nearest boundary
    t = float((ready - delta * (hi - lo)).max()) + (p - 1) * (hi + x.hot * b)  # forwards: hot
    ring_inter = np.where((a == l - 1) & (x.N > 1), (p - 1) * b, 0.0)
    return estimate(t, len(bits) + p - 1, 2 * (x.n * x.e - b), float((sc_inter + ring_inter).max()))
