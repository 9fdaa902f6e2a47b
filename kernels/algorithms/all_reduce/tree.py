"""Pipelined binary-tree AllReduce: reduce up a binary tree, broadcast down, chunk by chunk."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled, messages, pipelined
from kernels.phases import node_order
from kernels.schedule import StepBuilder

# Pipelining trades steps for overlap: k chunks take about k + 2*depth steps instead of
# 2*depth*k chunk-times. Each step costs a few microseconds of Python and MPI overhead, so chunks
# stay large (>= CHUNK_BYTES) and few (<= MAX_CHUNKS).
CHUNK_BYTES = 512 * 1024
MAX_CHUNKS = 16


def num_chunks(count: int, itemsize: int) -> int:
    by_bytes = -(-count * itemsize // CHUNK_BYTES)
    return max(1, min(MAX_CHUNKS, by_bytes, count))


def pipeline(parent: np.ndarray, k: int) -> list[tuple[np.ndarray, ...]]:
    """One tree's pipelined reduce then broadcast of k chunks, step by step, as (src, dst,
    chunk, reduce, slot) over positions (``parent[v]`` = -1 at the root). Each step every
    position forwards to its parent the next chunk its subtree has fully reduced (a second child
    waits while its sibling sends the same chunk: one step never reduces an element twice), and
    passes each child the next chunk it holds final."""
    m = parent.size
    v = np.arange(m)
    kids = np.flatnonzero(parent >= 0)
    nch = np.bincount(parent[kids], minlength=m)
    first = np.full(m, m, dtype=np.int64)
    np.minimum.at(first, parent[kids], kids)
    sib = np.full(m, -1, dtype=np.int64)
    second = kids[first[parent[kids]] != kids]
    sib[second] = first[parent[second]]
    slot = np.where(sib >= 0, 2, 1)
    root = int(np.flatnonzero(parent < 0)[0])
    got = np.zeros((m, k), dtype=np.int64)
    sent_up, final = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    steps: list[tuple[np.ndarray, ...]] = []
    while final.min() < k:
        if len(steps) > 4 * (k + 2 * m) + 8:
            raise RuntimeError("tree pipeline did not converge")  # a bug, not a user error
        c = np.minimum(sent_up, k - 1)
        ok = (parent >= 0) & (sent_up < k) & (got[v, c] == nch)
        blocked = np.zeros(m, dtype=bool)
        blocked[second] = ok[sib[second]] & (c[sib[second]] == c[second])
        up = np.flatnonzero(ok & ~blocked)
        down = kids[final[kids] < final[parent[kids]]]
        steps.append((np.concatenate((up, parent[down])), np.concatenate((parent[up], down)),
                      np.concatenate((c[up], final[down])),
                      np.concatenate((np.ones(up.size), np.zeros(down.size))),
                      np.concatenate((np.zeros(up.size), slot[down]))))
        got[parent[up], c[up]] += 1  # siblings never send one chunk in one step: no repeats
        sent_up[up] += 1
        final[down] += 1
        while final[root] < k and got[root, final[root]] == nch[root]:
            final[root] += 1
    return steps


def steps(parent: Sequence[int], k: int) -> list[list[tuple[int, int, int, bool]]]:
    """One tree's pipelined reduce then broadcast of k chunks (``parent[v]`` = -1 at the
    root), step by step: the moves (src, dst, chunk, reduce) over positions, each position's
    send up first, then one to each child in order. Each step every position forwards to its
    parent the next chunk its subtree has fully reduced, and passes each child the next chunk
    it holds final (:func:`pipeline` generates the same with numpy)."""
    m = len(parent)
    kids: list[list[int]] = [[] for _ in range(m)]
    for c, v in enumerate(parent):
        if v >= 0:
            kids[v].append(c)
    root = parent.index(-1)
    got = [[0] * k for _ in range(m)]  # per chunk, the children's sums a position reduced in
    up, final = [0] * m, [0] * m  # chunks sent to the parent; chunks held final
    out = []
    while min(final) < k:
        ready = [parent[v] >= 0 and up[v] < k and got[v][up[v]] == len(kids[v]) for v in range(m)]
        first = [kids[parent[v]][0] if parent[v] >= 0 else v for v in range(m)]
        # a second child waits while its sibling sends the same chunk (no double reduction)
        send = [ready[v] and not (first[v] != v and ready[first[v]] and up[first[v]] == up[v])
                for v in range(m)]
        down = {c for v in range(m) for c in kids[v] if final[c] < final[v]}
        out.append([move for v in range(m) for move in
                    ([(v, parent[v], up[v], True)] if send[v] else [])
                    + [(v, c, final[c], False) for c in kids[v] if c in down]])
        for v in range(m):
            if send[v]:
                got[parent[v]][up[v]] += 1
                up[v] += 1
        for c in down:
            final[c] += 1
        while final[root] < k and got[root][final[root]] == len(kids[root]):
            final[root] += 1
    return out


@lru_cache(maxsize=32)
def _generated(order: tuple[int, ...], k: int) -> Compiled:
    """The heap-ordered tree over ``order`` pipelined on k chunks, every step's messages."""
    rank = np.asarray(order, dtype=np.int64)
    steps = pipeline((np.arange(rank.size) - 1) // 2, k)
    return Compiled(rank.size, k, tuple(messages(rank[s], rank[d], c, c + 1, r, sl)
                                        for s, d, c, r, sl in steps))


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """The pipelined tree's messages, generated step by step (evaluated exactly)."""
    why = x.generates()
    if why:
        return why
    if x.p == 1:
        return Estimate(0.0, 0, 0, 0, "generated")
    return _generated(x.order, num_chunks(x.n, x.e))


@algorithm("tree", shape=pipelined(num_chunks, CHUNK_BYTES), closed=_closed)
def tree(problem: Problem, b: StepBuilder) -> None:
    """Binary tree (heap order over ranks, node by node) reduce, then broadcast, pipelined.

    The buffer is cut into k = clamp(n / 512 KiB, 1, 16) chunks. Each step, every rank forwards
    the next chunk its subtree has fully reduced to its parent, and every rank passes the next
    final chunk it holds to each child; the broadcast of early chunks overlaps the reduction of
    late ones. Two siblings never reduce the same chunk into their parent in one step. Steps:
    about k + 2*depth (depth = floor(log2 p)). Bytes sent per rank: n to the parent (not the root)
    plus n per child: at most 3n, 2n at the root.
    """
    order = node_order(problem.topology)
    if len(order) == 1:
        return
    k = num_chunks(problem.count, problem.itemsize)
    chunks = split(problem.count, k)
    for moves in steps([(v - 1) // 2 for v in range(len(order))], k):
        st = b.step()
        for src, dst, c, reduce in moves:
            b.move(order[src], order[dst], chunks[c], reduce=reduce, step=st)
