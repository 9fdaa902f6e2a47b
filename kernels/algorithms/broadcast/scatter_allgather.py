"""van de Geijn broadcast: binomial scatter of p chunks, then ring all_gather (MPICH, long msgs)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.algorithms.broadcast.binomial import rooted_order
from kernels.chunks import split
from kernels.schedule import Range, StepBuilder


def _span(chunks: list[Range], lo: int, hi: int) -> Range:
    """Chunks lo..hi-1 as one element range."""
    return Range(chunks[lo].start, chunks[hi - 1].stop)


def _sent(problem: Problem, rank: int) -> int:
    p, n = problem.world, problem.count
    v = rooted_order(problem).index(rank)
    chunks = split(n, p)
    top = min(v + (v & -v), p) if v else p  # the scatter leaves chunks v..top-1 at v
    return _span(chunks, v, top).size - chunks[v].size + n - chunks[(v + 1) % p].size


@algorithm("scatter_allgather", "broadcast", sent=_sent)
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
    order = rooted_order(problem)
    p = len(order)
    chunks = split(problem.count, p)
    d = (1 << (p - 1).bit_length()) // 2  # the largest power of two below p
    while d:
        st = b.step()
        for v in range(0, p - d, 2 * d):
            b.move(order[v], order[v + d], _span(chunks, v + d, min(v + 2 * d, p)), reduce=False,
                   step=st)
        d //= 2
    # rings.all_gather starts with member i owning chunk (i+1) % p: give it its own chunk.
    owned = [chunks[(i - 1) % p] for i in range(p)]
    rings.all_gather(b, order, owned, rings.open_steps(b, p - 1))
