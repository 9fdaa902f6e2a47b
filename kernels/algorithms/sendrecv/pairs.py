"""Sendrecv in phases: no rank sends and receives at once (unidirectional bandwidth)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.algorithms.sendrecv.ring import generated
from kernels.closed import Ctx, Estimate
from kernels.compiled import WHOLE, Compiled
from kernels.schedule import Range, StepBuilder


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """Even ranks send first, odd ranks second; with odd p, rank p-1 last, alone."""
    return generated(x, pairs=True)


@algorithm("pairs", "sendrecv", shape=WHOLE, closed=_closed,
           sent=lambda pr, r: pr.count if pr.world > 1 else 0)
def pairs(problem: Problem, b: StepBuilder) -> None:
    """The ring shift one direction at a time per link (unidirectional bandwidth): 2 or 3 steps.

    Even ranks send their buffer to r+1 in the first step, odd ranks in the second, so every
    rank only sends or only receives in each step and each link carries one direction at a time.

    Odd p: rank p-1 is even and so is its receiver, rank 0, which an odd cycle always forces:
    the transfer p-1 -> 0 gets a third step of its own (rank 0 sends in the first step, rank p-1
    receives in the second). At p = 1 one step copies the input to the output. Steps: 2 (3 for
    odd p > 1). Elements sent per rank: n (0 at p = 1), the same as ring's.
    """
    p, n = problem.world, problem.count
    inp, out = Range(0, n), Range(n, 2 * n)
    if p == 1:
        b.copy(0, inp, out, step=b.step())
        return
    first, second = b.step(), b.step()
    last = b.step() if p % 2 else second
    for r in range(p):
        st = last if r == p - 1 else (first if r % 2 == 0 else second)
        b.move_to(r, (r + 1) % p, inp, out, reduce=False, step=st)
