"""Direct alltoall: every rank sends every other rank its block at once (one step)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.algorithms.all_gather.direct import one_step
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """As direct all_gather (send j is to rank j, so the last is at position p-1), plus the
    local copy of the rank's own block."""
    why = x.need(contiguous=True, leaves="uniform")
    if why:
        return why
    t = one_step(x, x.b) + x.net.copy_time(x.b)
    return estimate(t, 1, (x.p - 1) * x.b, (x.p - x.l) * x.b)


@algorithm("direct", "alltoall", shape=BLOCKS, closed=_closed, sent=all_but_own)
def direct(problem: Problem, b: StepBuilder) -> None:
    """Everything at once: every rank sends every other rank its block in one step.

    One step: rank r sends input block j to every rank j != r, which receives it into output
    block r; rank r copies its own input block r to output block r locally.

    Elements sent per rank: (p-1) * n/p, each block in its own message (p-1 sends and p-1
    receives in flight per rank at once: what NCCL's grouped send/recv does).
    """
    p = problem.world
    inp, out = problem.blocks(0), problem.blocks(problem.count)
    st = b.step()
    for r in range(p):
        b.copy(r, inp[r], out[r], step=st)
        for j in range(p):
            if j != r:
                b.move_to(r, j, inp[j], out[r], reduce=False, step=st)
