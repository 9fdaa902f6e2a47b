"""Ring sendrecv: in one step every rank sends its buffer to r+1 and receives r-1's."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate
from kernels.compiled import WHOLE, Compiled, messages
from kernels.schedule import Range, StepBuilder


@lru_cache(maxsize=32)
def shifts(p: int, pairs: bool) -> Compiled:
    """Sendrecv's messages: the ranks of a step send the whole buffer (input, atom 0) to r+1,
    which receives it into its output (atom 1). ``pairs``: even ranks first, odd ranks second,
    and with odd p rank p-1 last, alone; else all at once."""
    r = np.arange(p)
    groups = [r]
    if pairs:
        last = p - 1 if p % 2 else -1
        groups = [r[(r % 2 == 0) & (r != last)], r[r % 2 == 1]] + ([r[-1:]] if last >= 0 else [])
    return Compiled(p, 1, tuple(messages(s, (s + 1) % p, np.zeros(len(s), np.int64),
                                         np.ones(len(s), np.int64), np.zeros(len(s)),
                                         np.zeros(len(s))) for s in groups))


def generated(x: Ctx, pairs: bool) -> Estimate | Compiled | str:
    """Sendrecv's messages generated (``pairs`` or all at once), evaluated exactly; on equal
    nodes in node order under uniform leaves, priced without them (:func:`hop_costs`)."""
    why = x.need(equal=False, contiguous=True)
    if why:
        return why
    if x.p == 1:
        return Estimate(x.net.copy_time(x.n * x.e), 1, 0, 0, "generated")
    if x.need(leaves="uniform") is None:
        return _symmetric(x, pairs)
    return x.generates() or shifts(x.p, pairs)


def hop_costs(x: Ctx) -> np.ndarray:
    """Cost of a whole-buffer message r -> r+1 by its link class (intra, inter, spine) on equal
    nodes in node order under uniform leaves: a step of such messages puts one flow on every
    port, NIC share, node and leaf uplink it crosses (a node's last rank is its only one to
    cross, a leaf's last node its only one to leave it)."""
    net, nb = x.net, x.n * x.e
    share = float(net.rank_cap[0])
    out = np.full(3, np.nan)
    out[0] = net.o + net.alpha[0] + nb / net.beta[0]
    if x.N > 1:
        out[1] = net.o + net.alpha[1] + nb / min(share, net.node_cap)
        out[2] = net.o + net.alpha[2] + nb / min(share, net.node_cap, float(net.up_cap[0]))
    return out


def _symmetric(x: Ctx, pairs: bool) -> Estimate:
    p, l, nb = x.p, x.l, x.n * x.e  # noqa: E741
    cost = hop_costs(x)
    inter = nb if x.N > 1 else 0
    if not pairs:  # one step: the dearest class present
        present = [0] if l > 1 else []
        if x.N > 1:
            present += [1] if x.leaves == 1 or x.L > 1 else []
            present += [2] if x.leaves > 1 else []
        return Estimate(float(cost[present].max()), 1, nb, inter, "closed form")
    r = np.arange(p)  # classes per rank (cheap arrays, no schedule): the phases' critical path
    node = r // l
    nxt = (r + 1) % p
    leaf = node // (x.L if x.leaves > 1 else x.N)
    cls = np.where(node == nxt // l, 0, np.where(leaf == leaf[nxt], 1, 2))
    c = cost[cls]
    last = p - 1 if p % 2 else -1
    first = np.where((r % 2 == 0) & (r != last), c, 0.0)  # step 1 ends at each end of its msg
    ready = first.copy()
    np.maximum.at(ready, nxt[(r % 2 == 0) & (r != last)], first[(r % 2 == 0) & (r != last)])
    odd = r[r % 2 == 1]
    done = np.maximum(ready[odd], ready[nxt[odd]]) + c[odd]
    after = ready.copy()
    np.maximum.at(after, odd, done)
    np.maximum.at(after, nxt[odd], done)
    t = float(after.max())
    if last >= 0:
        t = max(t, float(max(after[last], after[0]) + c[last]))
    return Estimate(t, 3 if p % 2 else 2, nb, inter, "closed form")


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """One step: every rank sends to r+1."""
    return generated(x, pairs=False)


@algorithm("ring", "sendrecv", shape=WHOLE, closed=_closed,
           sent=lambda pr, r: pr.count if pr.world > 1 else 0)
def ring(problem: Problem, b: StepBuilder) -> None:
    """Ring shift in one step: every rank sends to r+1 and receives from r-1 at once.

    One step: rank r sends its input [0, n) to rank r+1, which receives it into its output
    [n, 2n); at p = 1 the rank copies its input to its output locally.

    Elements sent per rank: n (0 at p = 1). Every rank sends and receives at once, so links that
    are full duplex carry both directions (what nccl-tests' sendrecv measures).
    """
    p, n = problem.world, problem.count
    inp, out = Range(0, n), Range(n, 2 * n)
    st = b.step()
    if p == 1:
        b.copy(0, inp, out, step=st)
        return
    for r in range(p):
        b.move_to(r, (r + 1) % p, inp, out, reduce=False, step=st)
