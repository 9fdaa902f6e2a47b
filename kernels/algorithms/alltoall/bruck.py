"""Bruck alltoall: ceil(log2 p) steps of packed blocks (any p), for small messages."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.schedule import Range, StepBuilder


def _moving(p: int, d: int) -> list[int]:
    """Slots sent at distance d (bit d set), descending: their homes then ascend in the output."""
    return [j for j in reversed(range(p)) if j & d]


def _copy_blocks(b: StepBuilder, rank: int, pairs: list[tuple[int, int]], c: int, st: int) -> None:
    """Local copies of c-element blocks (src, dst starts), runs of adjacent blocks merged."""
    runs: list[list[int]] = []
    for s, t in pairs:
        if runs and runs[-1][0] + runs[-1][2] == s and runs[-1][1] + runs[-1][2] == t:
            runs[-1][2] += c
        else:
            runs.append([s, t, c])
    for s, t, size in runs:
        b.copy(rank, Range(s, s + size), Range(t, t + size), step=st)


def _sent(problem: Problem, rank: int) -> int:
    return problem.block * sum(j.bit_count() for j in range(problem.world))


@algorithm("bruck", "alltoall", sent=_sent)
def bruck(problem: Problem, b: StepBuilder) -> None:
    """One local step, then ceil(log2 p) steps; in the step of distance d = 1, 2, 4, ..., rank r
    sends every slot j with bit d set, packed in one message, to rank r + d.

    Slot j of rank r starts as input block r + j (data for rank r + j) and ends holding rank
    r - j's block for r; it lives all along in output block r - j (mod p), its final place, so no
    inverse rotation is needed. The local step copies the input there (block r is the rank's own)
    and packs the first message into the input region, now scratch. Each step sends the packed
    slots from input blocks [0, m) and receives the peer's into blocks [p - m, p) (m <= p/2 slots),
    then its copies unpack them to their homes and pack the next message. Elements sent per rank:
    n/p * sum of popcount(j) for j < p (about n/2 * log2 p), in ceil(log2 p) messages.
    """
    p, c, n = problem.world, problem.block, problem.count
    dists = [1 << k for k in range((p - 1).bit_length())]

    def home(r: int, j: int) -> int:
        return n + (r - j) % p * c

    def pack(r: int, d: int, st: int) -> None:
        _copy_blocks(b, r, [(home(r, j), i * c) for i, j in enumerate(_moving(p, d))], c, st)

    st = b.step()
    for r in range(p):
        _copy_blocks(b, r, [((r + j) % p * c, home(r, j)) for j in range(p)], c, st)
        if dists:
            pack(r, dists[0], st)
    for k, d in enumerate(dists):
        st, slots = b.step(), _moving(p, d)
        m = len(slots)
        for r in range(p):
            b.move_to(r, (r + d) % p, Range(0, m * c), Range((p - m) * c, p * c), reduce=False,
                      step=st)
        for r in range(p):
            _copy_blocks(b, r, [((p - m + i) * c, home(r, j)) for i, j in enumerate(slots)], c, st)
            if k + 1 < len(dists):
                pack(r, dists[k + 1], st)
