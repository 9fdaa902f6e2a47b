"""Ring sendrecv: in one step every rank sends its buffer to r+1 and receives r-1's."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate
from kernels.compiled import WHOLE, Compiled, messages
from kernels.schedule import Range, StepBuilder


@lru_cache(maxsize=32)
def shifts(p: int, pairs: bool) -> Compiled:
    """Sendrecv's messages: the ranks of a step send the whole buffer (input, atom 0) to r+1,
    which receives it into its output (atom 1). ``pairs``: even ranks first, odd ranks second,
    and with odd p rank p-1 last, alone; else all at once."""
    r = np.arange(p)
    groups = [r]
    if pairs:
        last = p - 1 if p % 2 else -1
        groups = [r[(r % 2 == 0) & (r != last)], r[r % 2 == 1]] + ([r[-1:]] if last >= 0 else [])
    return Compiled(p, 1, tuple(messages(s, (s + 1) % p, np.zeros(len(s), np.int64),
                                         np.ones(len(s), np.int64), np.zeros(len(s)),
                                         np.zeros(len(s))) for s in groups))


def generated(x: Ctx, pairs: bool) -> Estimate | Compiled | str:
    """Sendrecv's messages generated (``pairs`` or all at once), evaluated exactly."""
    why = x.need(equal=False, contiguous=True) or x.generates()
    if why:
        return why
    if x.p == 1:
        return Estimate(x.net.copy_time(x.n * x.e), 1, 0, 0, "generated")
    return shifts(x.p, pairs)


def _closed(x: Ctx) -> Estimate | Compiled | str:
    """One step: every rank sends to r+1."""
    return generated(x, pairs=False)


@algorithm("ring", "sendrecv", shape=WHOLE, closed=_closed,
           sent=lambda pr, r: pr.count if pr.world > 1 else 0)
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
