"""Ring sendrecv: in one step every rank sends its buffer to r+1 and receives r-1's."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.schedule import Range, StepBuilder


@algorithm("ring", "sendrecv", sent=lambda pr, r: pr.count if pr.world > 1 else 0)
def ring(problem: Problem, b: StepBuilder) -> None:
    """Ring shift in one step: every rank sends to r+1 and receives from r-1 at once.

    One step: rank r sends its input [0, n) to rank r+1, which receives it into its output
    [n, 2n); at p = 1 the rank copies its input to its output locally.

    Elements sent per rank: n (0 at p = 1). Every rank sends and receives at once, so links that
    are full duplex carry both directions (what nccl-tests' sendrecv measures).
    """
    p, n = problem.world, problem.count
    inp, out = Range(0, n), Range(n, 2 * n)
    st = b.step()
    if p == 1:
        b.copy(0, inp, out, step=st)
        return
    for r in range(p):
        b.move_to(r, (r + 1) % p, inp, out, reduce=False, step=st)
