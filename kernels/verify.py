"""Symbolic verifier: proves that a set of schedules computes AllReduce, with no MPI.

Each element of each rank's buffer carries the set of ranks whose input it contains (a bitmask).
Initially rank r holds {r} everywhere. A copy receive replaces the set; a reduce receive unions
it — and fails if the sets intersect, since a contribution counted twice is a wrong sum. At the
end every element of every rank must hold all ranks. Sends read the state at the start of the
step, as every executor does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.schedule import Schedule, ScheduleError, validate


def verify_allreduce(schedules: Sequence[Schedule]) -> None:
    """Raise :class:`ScheduleError` unless the schedules are valid and compute AllReduce."""
    validate(schedules)
    p, count = schedules[0].world, schedules[0].count
    dtype = np.uint64 if p <= 64 else object
    state = [np.full(count, 1 << r, dtype=dtype) if p <= 64 else _objects(count, 1 << r) for r in range(p)]
    for i in range(len(schedules[0].steps)):
        steps = [sch.steps[i] for sch in schedules]
        # Messages in flight this step: (src, dst) -> payloads in posting order.
        inflight: dict[tuple[int, int], list[np.ndarray]] = {}
        for src, st in enumerate(steps):
            for s in st.sends:
                inflight.setdefault((src, s.peer), []).append(state[src][s.range.start : s.range.stop].copy())
        for dst, st in enumerate(steps):
            for rv in st.recvs:
                payload = inflight[(rv.peer, dst)].pop(0)
                view = state[dst][rv.range.start : rv.range.stop]
                if rv.reduce:
                    if np.any(_and(view, payload)):
                        raise ScheduleError(
                            f"step {i} rank {dst}: reduces a contribution twice "
                            f"(from rank {rv.peer}, range {rv.range})"
                        )
                    view |= payload
                else:
                    view[:] = payload
    full = (1 << p) - 1
    for r, st in enumerate(state):
        bad = np.nonzero(st != (np.uint64(full) if p <= 64 else full))[0]
        if bad.size:
            e = int(bad[0])
            missing = [q for q in range(p) if not int(st[e]) >> q & 1]
            raise ScheduleError(
                f"rank {r} element {e}: missing contributions of ranks {missing[:8]}"
                f"{'...' if len(missing) > 8 else ''} ({bad.size} wrong elements on this rank)"
            )


def _objects(count: int, value: int) -> np.ndarray:
    arr = np.empty(count, dtype=object)
    arr[:] = value
    return arr


def _and(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a & b if a.dtype != object else np.array([x & y for x, y in zip(a, b)], dtype=bool)
