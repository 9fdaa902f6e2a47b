"""Bruck alltoall: ceil(log2 p) messages of packed blocks per rank (any p), for small messages."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS
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


def _closed(x: Ctx) -> Estimate | str:
    """A local step copying p + m_1 blocks, then per d = 1, 2, 4, ... < p a shift by d of the
    m_d slots with bit d set with copies unpacking them, and a local step packing the next m_2d
    (2 ceil(log2 p) steps; every rank does the same)."""
    why = x.need(contiguous=True, leaves="one")
    if why:
        return why
    p, b = x.p, x.b
    ds = np.array([1 << i for i in range((p - 1).bit_length())], dtype=np.int64)
    # ranks j < p with bit d set: d per full period of 2d, plus the tail's excess over d
    m = np.array([(p // (2 * d)) * d + max(0, p % (2 * d) - d) for d in ds.tolist()],
                 dtype=np.int64)
    t = x.net.copy_time((p + (m[0] if len(m) else 0)) * b)
    inter = 0.0
    if len(ds):
        costs, crosses = x.shift_costs(ds, m * float(b))
        t += float(costs.sum()) + sum(x.net.copy_time((a + c) * b)
                                      for a, c in zip(m, np.append(m[1:], 0)))
        inter = float((crosses * m[:, None]).sum(axis=0).max()) * b
    return estimate(t, max(1, 2 * len(ds)), int(m.sum()) * b, inter)


@algorithm("bruck", "alltoall", shape=BLOCKS, closed=_closed,
           sent=lambda pr, r: pr.block * sum(j.bit_count() for j in range(pr.world)))
def bruck(problem: Problem, b: StepBuilder) -> None:
    """Bruck: ceil(log2 p) packed messages per rank, at distances 1, 2, 4, ...

    At distances d = 1, 2, 4, ... (ceil(log2 p) of them) rank r sends to rank r + d, in one
    message, every slot j with bit d set; each message is packed by a local step before it.

    Slot j of rank r starts as input block r + j (for rank r + j) and ends holding rank r - j's
    block for r. Its home is output block r - j (mod p), its final place, so Bruck's inverse
    rotation is not needed. The first (local) step copies every slot home (block r is the own
    block); before each message a local step packs its m <= p/2 slots into input blocks [0, m),
    the input region being scratch by then; the message lands in the peer's input blocks
    [p - m, p) and that step's copies unpack it home. Steps: 2*ceil(log2 p) (half of them local
    only; one at p = 1): a copy may not write what its step sends, and a pack merged into the
    previous message's step would need a third staging area that the workspace lacks. Elements
    sent per rank: n/p * sum of popcount(j) for j < p, about n/2 * log2 p.
    """
    p, c, n = problem.world, problem.block, problem.count
    dists = [1 << k for k in range((p - 1).bit_length())]

    def home(r: int, j: int) -> int:
        return n + (r - j) % p * c

    st = b.step()
    for r in range(p):
        _copy_blocks(b, r, [((r + j) % p * c, home(r, j)) for j in range(p)], c, st)
    for i, d in enumerate(dists):
        slots = _moving(p, d)
        m = len(slots)
        pack = st if i == 0 else b.step()
        st = b.step()
        for r in range(p):
            _copy_blocks(b, r, [(home(r, j), s * c) for s, j in enumerate(slots)], c, pack)
            b.move_to(r, (r + d) % p, Range(0, m * c), Range((p - m) * c, p * c), reduce=False,
                      step=st)
            _copy_blocks(b, r, [((p - m + s) * c, home(r, j)) for s, j in enumerate(slots)], c, st)
