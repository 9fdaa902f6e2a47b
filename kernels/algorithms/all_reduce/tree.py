"""Pipelined binary-tree AllReduce: reduce up a binary tree, broadcast down, chunk by chunk."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled, messages, pipelined
from kernels.schedule import StepBuilder

# Pipelining trades steps for overlap: k chunks take about k + 2*depth steps instead of
# 2*depth*k chunk-times. Each step costs a few microseconds of Python and MPI overhead, so chunks
# stay large (>= CHUNK_BYTES) and few (<= MAX_CHUNKS).
CHUNK_BYTES = 512 * 1024
MAX_CHUNKS = 16


def num_chunks(count: int, itemsize: int) -> int:
    by_bytes = -(-count * itemsize // CHUNK_BYTES)
    return max(1, min(MAX_CHUNKS, by_bytes, count))


@lru_cache(maxsize=32)
def _generated(order: tuple[int, ...], k: int) -> Compiled:
    """The loop of :func:`tree` over arrays: heap order over ``order``, k chunks; per step the
    up-sends (a right sibling waits when its left sibling sends the same chunk), then the
    down-sends to children whose next chunk the parent has final."""
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
        steps.append(messages(
            np.concatenate((rank[up], rank[parent[down]])),
            np.concatenate((rank[parent[up]], rank[down])), lo, lo + 1,
            np.concatenate((np.ones(len(up)), np.zeros(len(down)))),
            np.concatenate((np.zeros(len(up)), 1 + (down + 1) % 2))))
        np.add.at(got, (parent[up], cu), 1)
        sent_up[up] += 1
        final[down] += 1
        while final[0] < k and got[0, final[0]] == nch[0]:
            final[0] += 1
    return Compiled(p, k, tuple(steps))


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """The pipelined tree's messages, generated step by step (evaluated exactly)."""
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
    order = [r for node in problem.topology.nodes() for r in node]
    p = len(order)
    if p == 1:
        return
    chunks = split(problem.count, num_chunks(problem.count, problem.itemsize))
    k = len(chunks)
    children = [[c for c in (2 * v + 1, 2 * v + 2) if c < p] for v in range(p)]
    got = [[0] * k for _ in range(p)]  # child contributions reduced into chunk c at v
    sent_up = [0] * p  # next chunk v forwards to its parent (chunks go up in order)
    final = [0] * p  # chunks 0..final[v]-1 hold the final result at v
    guard = 4 * (k + 2 * p) + 8
    while min(final) < k:
        guard -= 1
        if guard < 0:
            raise RuntimeError("tree schedule did not converge")  # a bug, not a user error
        st = b.step()
        arriving: list[tuple[int, int]] = []  # (v, chunk) reductions landing this step
        for v in range(1, p):
            c = sent_up[v]
            parent = (v - 1) // 2
            if c < k and got[v][c] == len(children[v]) and (parent, c) not in arriving:
                b.move(order[v], order[parent], chunks[c], reduce=True, step=st)
                arriving.append((parent, c))
                sent_up[v] += 1
        delivered = []
        for v in range(p):
            for u in children[v]:
                c = final[u]
                if c < final[v]:
                    b.move(order[v], order[u], chunks[c], reduce=False, step=st)
                    delivered.append(u)
        for v, c in arriving:
            got[v][c] += 1
        for u in delivered:
            final[u] += 1
        while final[0] < k and got[0][final[0]] == len(children[0]):
            final[0] += 1
