"""All-reduce ``ring``, made ``COMMBENCH_SLOWDOWN`` times slower on MPI (test only, never shipped).

Imported by commbench's plugin discovery (``COMMBENCH_PLUGINS=commbench_slowdown``). With
``COMMBENCH_SLOWDOWN=F`` (F > 1) every compiled plan of the ring all_reduce schedule on a host
transport runs the ring, then spins for (F - 1) times the ring's own time of that call: time grows
with the bytes exactly as the ring's does, so each key slows by F (less the harness's fixed
per-iteration cost, negligible from 64 KiB). Unset or 1: nothing is patched, the run is BASE's.
The schedule, its bytes and its results are unchanged, so the records' keys and exact fields match.
"""

from __future__ import annotations

import os
import time
from typing import Any

from kernels.algorithm import Algorithm
from kernels.transports import TransportSpec

FACTOR_ENV = "COMMBENCH_SLOWDOWN"
TARGET = ("all_reduce", "ring")


def factor() -> float:
    raw = os.environ.get(FACTOR_ENV, "").strip()
    try:
        f = float(raw) if raw else 1.0
    except ValueError:
        raise ValueError(f"{FACTOR_ENV}={raw!r}: not a number") from None
    if f < 1.0:
        raise ValueError(f"{FACTOR_ENV}={raw!r}: a slowdown factor is >= 1")
    return f


class SlowPlan:
    """A plan that runs ``inner``, then spins (busy, like a slower algorithm) (F-1)x as long."""

    def __init__(self, inner: Any, slowdown: float) -> None:
        self._inner = inner
        self._extra = slowdown - 1.0

    def run(self) -> None:
        clock = time.perf_counter_ns
        t0 = clock()
        self._inner.run()
        t1 = clock()
        end = t1 + int((t1 - t0) * self._extra)
        while clock() < end:
            pass

    def close(self) -> None:
        self._inner.close()


_MARKED: dict[int, object] = {}  # id -> schedule of the target algorithm, until compiled


def _install(slowdown: float) -> None:
    schedule, create = Algorithm.schedule, TransportSpec.create

    def marking_schedule(self: Algorithm, problem: Any, rank: int) -> Any:
        sched = schedule(self, problem, rank)
        if (self.collective, self.name) == TARGET:
            _MARKED[id(sched)] = sched
        return sched

    def slowing_create(self: TransportSpec, comm: Any, *args: Any, **kwargs: Any) -> Any:
        tr = create(self, comm, *args, **kwargs)
        if self.device:
            return tr
        compile_ = tr.compile

        def compile_slow(sched: Any, buf: Any, scratch: Any, op: Any) -> Any:
            plan = compile_(sched, buf, scratch, op)
            return SlowPlan(plan, slowdown) if _MARKED.pop(id(sched), None) is sched else plan

        tr.compile = compile_slow
        return tr

    Algorithm.schedule = marking_schedule  # type: ignore[method-assign]
    TransportSpec.create = slowing_create  # type: ignore[method-assign]


if factor() > 1.0:
    _install(factor())
