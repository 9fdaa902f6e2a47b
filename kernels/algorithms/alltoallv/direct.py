"""Direct alltoallv: every rank sends every peer its block at once (one step)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.alltoall import direct as equal
from kernels.closed import Ctx, Estimate
from kernels.collectives.alltoallv import equal_blocks, plan, sent_elements
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """On the uniform matrix with n/p-element blocks the schedule is alltoall's direct one
    (the same messages, posted in the same order, and the own block's copy): its form."""
    return equal_blocks(x.problem) or equal._closed(x)


@algorithm("direct", "alltoallv", closed=_closed, sent=lambda pr, r: sent_elements(plan(pr).c, r))
def direct(problem: Problem, b: StepBuilder) -> None:
    """Everything at once: every rank sends each peer its block in one step.

    One step: rank s sends its C[s][d] elements to every d != s (empty blocks send nothing),
    each landing at s's place in d's output; s copies its own block C[s][s] locally.

    Elements sent per rank s: row_s - C[s][s], one message per non-empty peer block (up to p-1
    in flight each way, as NCCL's grouped send/recv and most MPI_Alltoallv implementations).
    """
    v, p = plan(problem), problem.world
    st = b.step()
    for s in range(p):
        b.copy(s, v.send(s, s), v.recv(s, s), step=st)
        for d in range(p):
            if d != s:
                b.move_to(s, d, v.send(s, d), v.recv(s, d), reduce=False, step=st)
