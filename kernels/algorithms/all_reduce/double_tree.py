"""Double binary tree AllReduce (NCCL's Tree): two complementary trees, half the data each."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.all_reduce.tree import CHUNK_BYTES, MAX_CHUNKS
from kernels.chunks import split
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled, Shape, messages
from kernels.phases import node_order
from kernels.schedule import StepBuilder

Plan = tuple[tuple[np.ndarray, ...], ...]  # per step: src, dst, chunk, reduce, slot (ranks)


def num_chunks(count: int, itemsize: int) -> int:
    """Chunks per tree: each half in pieces of about CHUNK_BYTES, 1 to MAX_CHUNKS (as ``tree``)."""
    by_bytes = -(-count * itemsize // (2 * CHUNK_BYTES))
    return max(1, min(MAX_CHUNKS, by_bytes, -(-count // 2)))


def parents(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Parent of each position 0..m-1 (-1: the root) in tree 1 and in tree 2.

    Tree 1: the in-order bit tree over q = m (m even) or m-1 positions: v's parent is
    (v xor lowbit) | 2 lowbit, or v xor lowbit past the end; 0 is the root above the top. Its
    inner nodes are the even positions. Odd m: position m-1 is the root's second child, so the
    inner nodes are the even positions but m-1. Tree 2 is tree 1 mirrored (v -> m-1-v, m even)
    or shifted by one (v -> v+1, m odd): its inner nodes are odd, so no position is an inner
    node in both trees."""
    q = m if m % 2 == 0 else m - 1
    p1 = np.full(m, -1, dtype=np.int64)
    v = np.arange(1, q)
    low = v & -v
    up = (v ^ low) | (low << 1)
    p1[1:q] = np.where(up >= q, v ^ low, up)
    if m % 2:
        p1[m - 1] = 0 if m > 1 else -1
        src = (np.arange(m) - 1) % m  # tree 2 position x plays tree 1's x-1
        p2 = np.where(p1[src] < 0, -1, (p1[src] + 1) % m)
    else:
        mir = m - 1 - np.arange(m)
        p2 = np.where(p1[mir] < 0, -1, m - 1 - p1[mir])
    return p1, p2


def _pipeline(parent: np.ndarray, k: int) -> list[tuple[np.ndarray, ...]]:
    """One tree's pipelined reduce then broadcast of k chunks, step by step, as (src, dst,
    chunk, reduce, slot) over positions. Each step every position forwards to its parent the
    next chunk its subtree has fully reduced (a second child waits while its sibling sends the
    same chunk: one step never reduces an element twice), and passes each child the next chunk
    it holds final."""
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
            raise RuntimeError("double tree pipeline did not converge")  # a bug, not user error
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


@lru_cache(maxsize=32)
def _plan(order: tuple[int, ...], k: int) -> Plan:
    """Both trees' steps side by side over ranks; tree t's chunk c is chunk t*k + c of the
    buffer; a rank posts tree 1's messages (up, then its children in order) before tree 2's."""
    rank = np.asarray(order, dtype=np.int64)
    trees = [_pipeline(par, k) for par in parents(len(order))]
    out = []
    for i in range(max(len(t) for t in trees)):
        cols = []
        for t, steps in enumerate(trees):
            if i < len(steps):
                s, d, c, r, sl = steps[i]
                cols.append((rank[s], rank[d], c + t * k, r, sl + 3 * t))
        src, dst, ch, red, slot = (np.concatenate(col) for col in zip(*cols))
        idx = np.lexsort((slot, src))
        out.append((src[idx], dst[idx], ch[idx], red[idx], slot[idx]))
    return tuple(out)


@lru_cache(maxsize=32)
def _generated(order: tuple[int, ...], k: int) -> Compiled:
    """:func:`_plan` compiled (one object per plan: the sizes that share it price in one batch)."""
    return Compiled(len(order), 2 * k, tuple(messages(s, d, c, c + 1, r, sl)
                                             for s, d, c, r, sl in _plan(order, k)))


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """Both trees' messages, generated step by step (evaluated exactly)."""
    if x.p == 1:
        return Estimate(0.0, 0, 0, 0, "generated")
    return _generated(x.order, num_chunks(x.n, x.e))


SHAPE = Shape(count=lambda pr: 2 * num_chunks(pr.count, pr.itemsize),
              itemsize=lambda pr: CHUNK_BYTES)


@algorithm("double_tree", shape=SHAPE, closed=_closed)
def double_tree(problem: Problem, b: StepBuilder) -> None:
    """Two complementary binary trees over the ranks in node order, each reducing then
    broadcasting half of the buffer, pipelined, both in the same steps.

    Tree 2 is tree 1 mirrored (p even) or shifted by one (p odd), so every rank is an inner
    node of at most one tree and a leaf of the other (``parents``): the load of forwarding
    splits between the trees. Each half is cut into k = clamp(n / (2 x 512 KiB), 1, 16)
    chunks and pipelined as ``tree``: each step a rank forwards its parent the next chunk its
    subtree has reduced and passes its children the next final chunk. Steps: about
    k + 2*depth (depth ~ log2 p). Bytes sent per rank: n/2 to each parent (not the roots) and
    n/2 per child: at most 2n (1.5n as an inner node of one tree, n/2 as a leaf of the other).
    Ranks in node order keep the trees' low levels inside a node; NCCL builds its trees over
    nodes and chains a node's GPUs instead.
    """
    order = node_order(problem.topology)
    if len(order) == 1:
        return
    k = num_chunks(problem.count, problem.itemsize)
    chunks = split(problem.count, 2 * k)
    for src, dst, ch, red, _ in _plan(tuple(order), k):
        st = b.step()
        for s, d, c, r in zip(src.tolist(), dst.tolist(), ch.tolist(), red.tolist()):
            b.move(s, d, chunks[c], reduce=bool(r), step=st)
