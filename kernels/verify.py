"""Symbolic verifier: proves that a set of schedules computes their collective, with no MPI.

Each workspace element carries a symbolic value: the set of ranks whose input it contains (a
bitmask) and the input index they all contributed (``-1``: nothing yet, garbage). Initially rank
r's input region holds ``({r}, i)`` at input index i and everything else is garbage. A copy
receive or a local copy replaces the value; a reduce receive unions the sets — and fails if the
sets intersect (a contribution counted twice), if the indices differ (different elements added
together) or if either side is garbage. At the end every output element must hold exactly what
the collective's :class:`~kernels.collective.Result` says: the reduction of one input index over
all ranks, or one rank's input element. Sends read the state at the start of the step and copies
run after the step's receives, as every executor does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.algorithm import Problem
from kernels.schedule import Schedule, ScheduleError, validate


def verify(problem: Problem, schedules: Sequence[Schedule]) -> None:
    """Raise :class:`ScheduleError` unless the schedules are valid and compute ``problem``."""
    validate(schedules)
    p, space = problem.world, schedules[0].space
    if space != problem.space:
        raise ScheduleError(f"schedules index {space} elements; the workspace has {problem.space}")
    big = p > 64  # masks beyond 64 ranks are Python ints in object arrays
    mask = [_zeros(space, big) for _ in range(p)]
    index = [np.full(space, -1, dtype=np.int64) for _ in range(p)]
    for r in range(p):
        inp = problem.layout(r).inp
        if inp is not None:
            mask[r][inp.start:inp.stop] = 1 << r
            index[r][inp.start:inp.stop] = np.arange(inp.size)
    for i in range(len(schedules[0].steps)):
        steps = [sch.steps[i] for sch in schedules]
        inflight: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
        for src, st in enumerate(steps):
            for s in st.sends:
                a, b = s.range.start, s.range.stop
                inflight.setdefault((src, s.peer), []).append(
                    (mask[src][a:b].copy(), index[src][a:b].copy()))
        for dst, st in enumerate(steps):
            for rv in st.recvs:
                m_in, i_in = inflight[(rv.peer, dst)].pop(0)
                a, b = rv.range.start, rv.range.stop
                if rv.reduce:
                    _reduce_into(i, dst, rv.peer, rv.range, mask[dst][a:b], index[dst][a:b],
                                 m_in, i_in)
                else:
                    mask[dst][a:b] = m_in
                    index[dst][a:b] = i_in
            for c in st.copies:
                mask[dst][c.dst.start:c.dst.stop] = mask[dst][c.src.start:c.src.stop].copy()
                index[dst][c.dst.start:c.dst.stop] = index[dst][c.src.start:c.src.stop].copy()
    _check_end(problem, mask, index, big)


def _zeros(n: int, big: bool) -> np.ndarray:
    if not big:
        return np.zeros(n, dtype=np.uint64)
    arr = np.empty(n, dtype=object)
    arr[:] = 0
    return arr


def _reduce_into(step: int, dst: int, src: int, rng: object, m: np.ndarray, idx: np.ndarray,
                 m_in: np.ndarray, i_in: np.ndarray) -> None:
    overlap = (m & m_in) if m.dtype != object else np.array([x & y for x, y in zip(m, m_in)])
    # few calls for the usual case (equal indices make one sign test do for both sides); which
    # rule broke is worked out only when one did
    if (idx != i_in).any() or (idx < 0).any() or overlap.any():
        where = f"step {step} rank {dst}: reduce from rank {src} into {rng}"
        if (idx < 0).any() or (i_in < 0).any():
            raise ScheduleError(f"{where} involves an element that holds no input yet")
        if (idx != i_in).any():
            e = int(np.nonzero(idx != i_in)[0][0])
            raise ScheduleError(
                f"{where} adds input element {int(i_in[e])} to element {int(idx[e])}")
        raise ScheduleError(f"{where} reduces a contribution twice")
    m |= m_in


def _check_end(problem: Problem, mask: list[np.ndarray], index: list[np.ndarray],
               big: bool) -> None:
    spec, p = problem.spec, problem.world
    full = (1 << p) - 1
    for r in range(p):
        out = problem.layout(r).out
        if out is None:
            continue
        want = spec.result(problem.count, p, r, problem.root, 0, out.size)
        got_m, got_i = mask[r][out.start:out.stop], index[r][out.start:out.stop]
        if want.source is None:
            want_m = np.full(out.size, full, dtype=object if big else np.uint64)
        elif big:
            want_m = np.array([1 << int(s) for s in want.source], dtype=object)
        else:
            want_m = np.left_shift(np.uint64(1), want.source.astype(np.uint64))
        bad = np.nonzero((got_m != want_m) | (got_i != want.index))[0]
        if bad.size:
            e = int(bad[0])
            have = [q for q in range(p) if int(got_m[e]) >> q & 1]
            need = [q for q in range(p) if int(want_m[e]) >> q & 1]
            raise ScheduleError(
                f"rank {r} output element {e}: holds input element {int(got_i[e])} of ranks "
                f"{_short(have)}, should hold element {int(want.index[e])} of ranks {_short(need)} "
                f"({bad.size} wrong elements on this rank)")


def _short(ranks: list[int]) -> str:
    return str(ranks[:8])[:-1] + (", ...]" if len(ranks) > 8 else "]")
