"""The MPI transport's schedule plan with emulated links: per step, the receives and undelayed sends
start at once, each delayed send once its delay has passed since the step began
(:func:`bench.emulate.steps.releases`), so concurrent sends overlap their delays as the cost model
overlaps their link times."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from mpi4py import MPI

from bench.emulate.steps import releases
from bench.emulate.wait import Waiter
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.mpi import MpiPlan

Pairs = list[tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Wait:
    """Sends of schedule step ``step`` to ``peers`` that start ``offset_s`` after it began."""

    step: int
    offset_s: float
    peers: tuple[int, ...]


class EmulatedPlan:
    def __init__(self, inner: MpiPlan, schedule: Schedule, delays: Sequence[Sequence[float]],
                 op: ReduceOp, waiter: Waiter) -> None:
        self._inner, self._ufunc, self._waiter = inner, op.ufunc, waiter
        kept = [i for i, st in enumerate(schedule.steps) if st.recvs or st.sends or st.copies]
        if len(kept) != len(inner.steps):  # the plain plan keeps the same steps
            raise ValueError(f"plan has {len(inner.steps)} steps, schedule {len(kept)} non-idle")
        self.waits: list[Wait] = []  # every delayed release, in the order run() waits for them
        self._steps: list[tuple[list[MPI.Prequest], list[tuple[float, list[MPI.Prequest]]],
                                list[MPI.Prequest], Callable[[], bool], Pairs, Pairs]] = []
        for i, (reqs, reds, copies) in zip(kept, inner.steps):
            st = schedule.steps[i]
            sends = reqs[len(st.recvs):]
            peers = [s.peer for s in st.sends]
            first, later = list(reqs[:len(st.recvs)]), []
            for rel in releases(peers, delays[i]):
                group = [sends[k] for k in rel.sends]
                if rel.offset_s <= 0:
                    first += group
                    continue
                later.append((rel.offset_s, group))
                self.waits.append(Wait(i, rel.offset_s, tuple(peers[k] for k in rel.sends)))
            self._steps.append((first, later, reqs, partial(MPI.Request.Testall, reqs), reds,
                                copies))

    def run(self) -> None:
        ufunc, copyto, waiter = self._ufunc, np.copyto, self._waiter
        for first, later, reqs, done, reds, copies in self._steps:
            if reqs:
                mark = waiter.mark()
                if first:
                    MPI.Prequest.Startall(first)
                for offset, group in later:
                    waiter.until(mark, offset)
                    MPI.Prequest.Startall(group)
                waiter.until_done(done)
            for dst, src in reds:
                ufunc(dst, src, out=dst)
            for dst, src in copies:
                copyto(dst, src)

    def close(self) -> None:
        self._steps = []
        self._inner.close()
