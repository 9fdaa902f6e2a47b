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


@lru_cache(maxsize=32)
def _pair_paths(p: int, l: int, per_leaf: int  # noqa: E741 - ranks per node
                ) -> tuple[frozenset[int], frozenset[tuple[int, ...]], tuple[int, ...] | None]:
    """The paths of ``pairs`` on p ranks in nodes of l, leaves of ``per_leaf`` nodes, by link
    class (0 intra, 1 inter, 2 spine, 3 none): the first phase's messages (class of x -> x+1,
    x even and not the odd-p last), each second-phase message s -> s+1 (s odd) as (class of the
    message that readied s, of the one that readied s+1, its own) and, for odd p, the third
    (p-1 -> 0) as (p-3's, p-2's, 0's, its own). Computed once per structure, not per size."""
    r = np.arange(p)
    node, nxt = r // l, (r + 1) % p
    leaf = node // per_leaf
    cls = np.where(node == nxt // l, 0, np.where(leaf == leaf[nxt], 1, 2))
    last = p - 1 if p % 2 else -1
    even = r[(r % 2 == 0) & (r != last)]
    ready = np.full(p, 3)  # the class of the first-phase message each rank took part in
    ready[even], ready[nxt[even]] = cls[even], cls[even]
    odd = r[r % 2 == 1]
    paths = frozenset(zip(ready[odd].tolist(), ready[nxt[odd]].tolist(), cls[odd].tolist()))
    third = (int(cls[p - 3]), int(cls[p - 2]), int(ready[0]), int(cls[last])) if last > 0 else None
    return frozenset(cls[even].tolist()) or frozenset({3}), paths, third


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
    c = np.append(cost, 0.0)  # class 3: nothing (a rank idle in a phase)
    singles, paths, third = _pair_paths(p, l, x.L if x.leaves > 1 else x.N)
    t = max(float(c[list(singles)].max()), max(max(c[a], c[b]) + c[m] for a, b, m in paths))
    if third is not None:
        a, m, z, w = third
        t = max(t, float(max(c[a] + c[m], c[z]) + c[w]))
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
