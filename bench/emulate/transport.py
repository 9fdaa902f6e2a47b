"""The MPI transport with emulated links: compiling a schedule, every rank gathers every rank's
sends of each step (once per case, outside the timed loop) to price its own exactly. Vendor calls
run inside the MPI library, whose messages cannot be delayed: refused."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.emulate.links import EmulatedLinks
from bench.emulate.plan import EmulatedPlan
from bench.emulate.steps import rank_delays, sends_of
from bench.emulate.wait import Waiter
from kernels.collective import Collective, Layout
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import VendorUnavailable
from kernels.transports.mpi import MpiTransport


class EmulatedMpi:
    """:class:`kernels.transports.mpi.MpiTransport` whose schedule plans are
    :class:`bench.emulate.plan.EmulatedPlan`."""

    def __init__(self, inner: MpiTransport, links: EmulatedLinks, waiter: Waiter) -> None:
        if inner.size != links.world:
            raise ValueError(f"emulated job of {links.world} ranks on a communicator of "
                             f"{inner.size}")
        self.inner, self.links, self.waiter = inner, links, waiter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # everything but compile and vendor: the plain transport's

    def compile(self, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray | None,
                op: ReduceOp) -> EmulatedPlan:
        everyone = self.inner.comm.allgather(sends_of(schedule, buf.itemsize))
        delays = rank_delays(self.links, everyone, self.rank)
        plan = self.inner.compile(schedule, buf, scratch, op)
        return EmulatedPlan(plan, schedule, delays, op, self.waiter)  # type: ignore[arg-type]

    def vendor(self, spec: Collective, buf: np.ndarray, layout: Layout, op: ReduceOp | None,
               root: int) -> Any:
        raise VendorUnavailable(f"{spec.name}: the vendor call cannot be emulated (its messages "
                                f"are inside the MPI library)")
