"""Pipelined chain broadcast: chunks of the buffer flow down a chain of ranks from the root."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.broadcast.binomial import rooted_order
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import pipelined
from kernels.schedule import StepBuilder

# A chain is p-1 hops deep, so it needs many chunks to fill (time ~ (k + p - 2) chunk-times);
# each step costs a few microseconds of overhead, so chunks stay >= CHUNK_BYTES.
CHUNK_BYTES = 512 * 1024
MAX_CHUNKS = 64


def num_chunks(count: int, itemsize: int) -> int:
    by_bytes = -(-count * itemsize // CHUNK_BYTES)
    return max(1, min(MAX_CHUNKS, by_bytes, count))


def _sent(problem: Problem, rank: int) -> int:
    last = rooted_order(problem)[-1]
    return 0 if rank == last else problem.count


def _closed(x: Ctx) -> Estimate | str:
    """k chunks down the chain of ranks in node order over hops of costs c_i: sum c_i + (k-1)
    max c_i (the critical path rides the first chunk to the dearest hop, waits there for the
    k-1 others, then rides the last chunk to the end)."""
    k = num_chunks(x.n, x.e)
    why = x.need(equal=False, divides=k, root0=True)
    if why:
        return why
    if x.p == 1:
        return estimate(0.0, 0, 0, 0)
    b = x.n // k * x.e
    edges = x.edge_costs(b, 1, wrap=False)
    inside = x.p - 1 - edges.size  # the other hops stay in a node, each alone on its ports
    top = [float(edges.max())] if edges.size else []
    t = float(edges.sum()) + inside * x.intra(b) if inside else float(edges.sum())
    t += (k - 1) * max(top + ([x.intra(b)] if inside else []))
    return estimate(t, k + x.p - 2, x.n * x.e, x.n * x.e * (x.N > 1))


@algorithm("chain", "broadcast", sent=_sent, shape=pipelined(num_chunks, CHUNK_BYTES),
           closed=_closed)
def chain(problem: Problem, b: StepBuilder) -> None:
    """Pipelined chain: chunks flow down the ranks from the root, one hop per step.

    k + p - 2 steps over k = clamp(n bytes / 512 KiB, 1, 64) chunks; in step t, chain position
    i passes chunk t - i (if 0 <= t - i < k) to position i + 1.

    The chain is the ranks node by node starting at the root (rank order from the root when nodes
    are contiguous blocks), so it crosses between nodes about once per node. Each position receives
    chunk t - i + 1 while it sends chunk t - i. Elements sent per rank: n, except the end of the
    chain, which sends nothing.
    """
    order = rooted_order(problem)
    p = len(order)
    chunks = split(problem.count, num_chunks(problem.count, problem.itemsize))
    k = len(chunks)
    if p == 1:
        return
    for t in range(k + p - 2):
        st = b.step()
        for i in range(max(0, t - k + 1), min(t + 1, p - 1)):
            b.move(order[i], order[i + 1], chunks[t - i], reduce=False, step=st)
