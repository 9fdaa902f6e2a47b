"""Forms that generate an algorithm's messages with numpy instead of building its schedules:
for algorithms with few steps whose time has no simple sum (pipelined tree, Bruck's wrapped
runs, sendrecv). The messages, on symbolic atoms, go to :func:`bench.costmodel.compiled.evaluate`,
which is exact; tests hold each generator equal to the real schedule's evaluation.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from bench.costmodel.closed import Ctx, Job, closed
from bench.costmodel.compiled import Compiled, CStep
from bench.costmodel.cost import Estimate
from kernels.algorithms.all_reduce import tree as tree_alg

_NONE = np.zeros(0, dtype=np.int64)


def _step(src: np.ndarray, dst: np.ndarray, lo: np.ndarray, hi: np.ndarray, red: np.ndarray,
          slot: np.ndarray, hot_lo: np.ndarray | None = None,
          hot_hi: np.ndarray | None = None) -> CStep:
    """One step's messages, grouped by sender in posting order (``slot`` orders a sender's);
    ``hot_lo``/``hot_hi``: per message, the piece its sender wrote earlier in the call (empty
    where lo == hi; none given: every message is sent clean)."""
    idx = np.lexsort((slot, src))
    src, dst, lo, hi, red = src[idx], dst[idx], lo[idx], hi[idx], red[idx]
    starts = np.searchsorted(src, src, side="left")
    if hot_lo is None or hot_hi is None:
        hm, hl, hh = _NONE, _NONE, _NONE
    else:
        hl, hh = np.asarray(hot_lo, np.int64)[idx], np.asarray(hot_hi, np.int64)[idx]
        hm = np.flatnonzero(hh > hl)
        hl, hh = hl[hm], hh[hm]
    return CStep(src, dst, lo, hi, red.astype(bool), starts, _NONE, _NONE, _NONE, hm, hl, hh)


@lru_cache(maxsize=32)
def _tree(order: tuple[int, ...], k: int) -> Compiled:
    """kernels/algorithms/all_reduce/tree.py's loop over arrays: heap order over ``order``,
    k chunks; per step the up-sends (a right sibling waits when its left sibling sends the
    same chunk), then the down-sends to children whose next chunk the parent has final."""
    p, rank = len(order), np.asarray(order, dtype=np.int64)
    v = np.arange(p)
    parent = (v - 1) // 2
    nch = (2 * v + 1 < p).astype(np.int64) + (2 * v + 2 < p)
    got = np.zeros((p, k), dtype=np.int64)
    sent_up, final = np.zeros(p, dtype=np.int64), np.zeros(p, dtype=np.int64)
    steps, guard = [], 4 * (k + 2 * p) + 8
    u = v[1:]
    while final.min() < k:
        guard -= 1
        if guard < 0:
            raise RuntimeError("tree generator did not converge")
        c = sent_up
        ok = (v >= 1) & (c < k)
        ok[ok] &= got[v[ok], c[ok]] == nch[ok]
        right = (v % 2 == 0) & (v >= 2)
        blocked = np.zeros(p, dtype=bool)
        blocked[right] = ok[v[right] - 1] & (c[v[right] - 1] == c[right])
        up = np.flatnonzero(ok & ~blocked)
        down = u[final[u] < final[parent[u]]]
        cu, cd = c[up], final[down]
        lo = np.concatenate((cu, cd))
        # hot: a chunk sent up was reduced into by a rank with children; every chunk sent down
        # was reduced (the root) or received (the others) by its sender
        hot = np.concatenate((nch[up] > 0, np.ones(len(down), dtype=bool)))
        steps.append(_step(
            np.concatenate((rank[up], rank[parent[down]])), np.concatenate((rank[parent[up]],
                                                                           rank[down])),
            lo, lo + 1, np.concatenate((np.ones(len(up)), np.zeros(len(down)))),
            np.concatenate((np.zeros(len(up)), 1 + (down + 1) % 2)), lo, lo + hot))
        np.add.at(got, (parent[up], cu), 1)
        sent_up[up] += 1
        final[down] += 1
        while final[0] < k and got[0, final[0]] == nch[0]:
            final[0] += 1
    return Compiled(p, k, tuple(steps))


@closed("all_reduce", "tree")
def tree(x: Ctx) -> Estimate | Job | str:
    """The pipelined binary tree's messages, generated step by step and evaluated exactly."""
    if x.p == 1:
        return Estimate(0.0, 0, 0, 0, "generated")
    k = tree_alg.num_chunks(x.n, x.e)
    return Job(_tree(x.order, k))


@lru_cache(maxsize=32)
def _bruck(p: int) -> Compiled:
    """Bruck all_gather with ranks numbered node by node: member i sends members i..i+t-1's
    blocks (t = min(d, p-d)) to i-d; a run that wraps past p is two messages, the low first."""
    i = np.arange(p)
    steps, d = [], 1
    while d < p:
        t = min(d, p - d)
        wrap = i + t > p
        w = i[wrap]
        src = np.concatenate((i, w))
        dst = (src - d) % p
        lo = np.concatenate((np.where(wrap, 0, i), w))
        hi = np.concatenate((np.where(wrap, i + t - p, i + t), np.full(len(w), p)))
        slot = np.concatenate((np.zeros(p), np.ones(len(w))))
        # hot: every block but the sender's own (block i, first in a run starting at i)
        hlo = np.where(lo == src, lo + 1, lo)
        steps.append(_step(src, dst, lo, hi, np.zeros(len(src)), slot, hlo, np.maximum(hi, hlo)))
        d *= 2
    return Compiled(p, p, tuple(steps))


@closed("all_gather", "bruck")
def bruck_allgather(x: Ctx) -> Estimate | Job | str:
    """Bruck's messages, generated per step (runs merged as move_runs does) and evaluated."""
    why = x.need(equal=False, contiguous=True, hot=True)
    return why or Job(_bruck(x.p))


@lru_cache(maxsize=32)
def _sendrecv_comp(p: int, pairs: bool) -> Compiled:
    """Sendrecv: the ranks of a step send the whole buffer (input, atom 0) to r+1, which
    receives it into its output (atom 1). ``pairs``: even ranks first, odd ranks second, and
    with odd p rank p-1 last, alone; else all at once."""
    r = np.arange(p)
    if pairs:
        last = p - 1 if p % 2 else -1
        groups = [r[(r % 2 == 0) & (r != last)], r[r % 2 == 1]] + ([r[-1:]] if last >= 0 else [])
    else:
        groups = [r]
    out = []
    for senders in groups:
        n = len(senders)
        out.append(_step(senders, (senders + 1) % p, np.zeros(n, np.int64), np.ones(n, np.int64),
                         np.zeros(n), np.zeros(n)))
    return Compiled(p, 1, tuple(out))


def _sendrecv(x: Ctx, pairs: bool) -> Estimate | Job | str:
    why = x.need(equal=False, contiguous=True, hot=True)  # every rank sends its input: cold
    if why:
        return why
    if x.p == 1:
        return Estimate(x.net.copy_time(x.n * x.e), 1, 0, 0, "generated")
    return Job(_sendrecv_comp(x.p, pairs))


@closed("sendrecv", "ring")
def sendrecv_ring(x: Ctx) -> Estimate | Job | str:
    """One step: every rank sends to r+1."""
    return _sendrecv(x, pairs=False)


@closed("sendrecv", "pairs")
def sendrecv_pairs(x: Ctx) -> Estimate | Job | str:
    """Even ranks send first, odd ranks second; with odd p, rank p-1 last, alone."""
    return _sendrecv(x, pairs=True)
