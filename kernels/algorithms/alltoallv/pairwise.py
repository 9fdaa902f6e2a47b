"""Pairwise-exchange alltoallv: p-1 steps, in step k rank r sends to r+k, receives from r-k."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.alltoall import pairwise as equal
from kernels.closed import Ctx, Estimate
from kernels.collectives.alltoallv import equal_blocks, plan, sent_elements
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """On the uniform matrix with n/p-element blocks the schedule is alltoall's pairwise one:
    its form."""
    return equal_blocks(x.problem) or equal._closed(x)


@algorithm("pairwise", "alltoallv", closed=_closed,
           sent=lambda pr, r: sent_elements(plan(pr).c, r))
def pairwise(problem: Problem, b: StepBuilder) -> None:
    """Pairwise exchange: in step k rank r sends its block to r+k and receives r-k's.

    p-1 steps (one at p = 1); in step k = 1..p-1 rank r sends C[r][r+k] elements to r+k and
    receives C[r-k][r] from r-k (mod p), an empty block sending nothing; the first step also
    copies the own block C[r][r] locally.

    Elements sent per rank r: row_r - C[r][r], one message per step: a skewed matrix makes the
    step as slow as its largest block, which the direct algorithm does not wait for.
    """
    v, p = plan(problem), problem.world
    steps = [b.step() for _ in range(max(p - 1, 1))]
    for r in range(p):
        b.copy(r, v.send(r, r), v.recv(r, r), step=steps[0])
    for k, st in enumerate(steps[: p - 1], start=1):
        for r in range(p):
            d = (r + k) % p
            b.move_to(r, d, v.send(r, d), v.recv(r, d), reduce=False, step=st)
