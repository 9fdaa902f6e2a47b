"""Pairwise-exchange alltoall: p-1 steps, in step k rank r sends to r+k and receives from r-k."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """p-1 shift steps of one block (offsets 1..p-1), plus the first step's local copy."""
    why = x.need(contiguous=True, leaves="one")
    if why:
        return why
    total, inter = x.one_block_shifts()
    return estimate(total + x.net.copy_time(x.b), max(x.p - 1, 1), (x.p - 1) * x.b, inter)


@algorithm("pairwise", "alltoall", shape=BLOCKS, closed=_closed, sent=all_but_own)
def pairwise(problem: Problem, b: StepBuilder) -> None:
    """Pairwise exchange: in step k rank r sends to r+k and receives from r-k.

    p-1 steps (one at p = 1); in step k = 1..p-1 rank r sends input block r+k to rank r+k,
    which receives it into output block r, and receives rank r-k's block into output block r-k
    (mod p). The first step also copies input block r to output block r locally.

    Elements sent per rank: (p-1) * n/p, one block per step: a single message in flight each way,
    as MPICH does for long messages.
    """
    p = problem.world
    inp, out = problem.blocks(0), problem.blocks(problem.count)
    steps = [b.step() for _ in range(max(p - 1, 1))]
    for r in range(p):
        b.copy(r, inp[r], out[r], step=steps[0])
    for k, st in enumerate(steps[: p - 1], start=1):
        for r in range(p):
            b.move_to(r, (r + k) % p, inp[(r + k) % p], out[r], reduce=False, step=st)
