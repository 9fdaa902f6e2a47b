"""Double binary tree AllReduce (NCCL's Tree): two complementary trees, half the data each."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.all_reduce.tree import CHUNK_BYTES, MAX_CHUNKS, pipeline, steps
from kernels.chunks import split
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled, Shape, messages
from kernels.phases import node_order
from kernels.schedule import StepBuilder


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


@lru_cache(maxsize=32)
def _generated(order: tuple[int, ...], k: int) -> Compiled:
    """Both trees' steps side by side over ranks (one object per plan: the sizes that share it
    price in one batch); tree t's chunk c is chunk t*k + c of the buffer; a rank posts tree 1's
    messages (up, then its children in order) before tree 2's."""
    rank = np.asarray(order, dtype=np.int64)
    trees = [pipeline(par, k) for par in parents(len(order))]
    steps = []
    for i in range(max(len(t) for t in trees)):
        cols = []
        for t, tsteps in enumerate(trees):
            if i < len(tsteps):
                s, d, c, r, sl = tsteps[i]
                cols.append((rank[s], rank[d], c + t * k, r, sl + 3 * t))
        src, dst, ch, red, slot = (np.concatenate(col) for col in zip(*cols))
        steps.append(messages(src, dst, ch, ch + 1, red, slot))
    return Compiled(len(order), 2 * k, tuple(steps))


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """Both trees' messages, generated step by step (evaluated exactly)."""
    why = x.generates()
    if why:
        return why
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
    chunks = split(problem.count, 2 * k)  # tree t's chunk c is chunk t k + c
    trees = [steps(parent.tolist(), k) for parent in parents(len(order))]
    for i in range(max(len(t) for t in trees)):
        st = b.step()
        for t, tree in enumerate(trees):  # a rank posts tree 1's moves before tree 2's
            for src, dst, c, reduce in tree[i] if i < len(tree) else []:
                b.move(order[src], order[dst], chunks[t * k + c], reduce=reduce, step=st)
