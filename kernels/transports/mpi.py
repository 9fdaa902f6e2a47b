"""MPI transport: schedules on numpy buffers through mpi4py persistent requests."""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from kernels.collective import Collective, Layout, VendorArgs
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Bound, Plan, vendor_call, views

TAG = 7
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}


def _bytes(view: np.ndarray) -> list[Any]:
    return [view.view(np.uint8), MPI.BYTE]


class MpiPlan:
    """A schedule bound to buffers: per step, persistent receives and sends, then reductions.

    Receives that reduce land in ``scratch`` at the same offsets (a step never writes an element
    twice, so a workspace-sized scratch always fits) and are folded in after the step's Waitall;
    then the step's local copies. Steps in which this rank has nothing to do are dropped.
    :attr:`at` is the index (into :attr:`trace`) of the step running, -1 between runs: one store
    per step, read by the watchdog when a case hangs (``bench.launch.rankstate``).
    """

    def __init__(self, comm: MPI.Comm, schedule: Schedule, buf: np.ndarray,
                 scratch: np.ndarray | None, op: ReduceOp) -> None:
        self._ufunc = op.ufunc
        Pairs = list[tuple[np.ndarray, np.ndarray]]
        # per step kept: its requests (the receives, then the sends, each in schedule order),
        # reductions (destination, scratch) and copies (destination, source); public for
        # wrappers that run the steps themselves (``bench.emulate``)
        self.steps: list[tuple[list[MPI.Prequest], Pairs, Pairs]] = []
        # per step kept: (its index in the schedule, peers received from, peers sent to)
        self.trace: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        self.nsteps = len(schedule.steps)
        self.at = -1
        for i, st in enumerate(schedule.steps):
            reqs: list[MPI.Prequest] = []
            reds: Pairs = []
            for rv in st.recvs:
                a, b = rv.range.start, rv.range.stop
                if rv.reduce:
                    assert scratch is not None, "a reducing schedule needs scratch"
                    reqs.append(comm.Recv_init(_bytes(scratch[a:b]), rv.peer, TAG))
                    reds.append((buf[a:b], scratch[a:b]))
                else:
                    reqs.append(comm.Recv_init(_bytes(buf[a:b]), rv.peer, TAG))
            for s in st.sends:
                reqs.append(comm.Send_init(_bytes(buf[s.range.start : s.range.stop]), s.peer, TAG))
            copies = [(buf[c.dst.start:c.dst.stop], buf[c.src.start:c.src.stop]) for c in st.copies]
            if reqs or copies:
                self.steps.append((reqs, reds, copies))
                self.trace.append((i, tuple(rv.peer for rv in st.recvs),
                                   tuple(x.peer for x in st.sends)))

    def run(self) -> None:
        ufunc, copyto = self._ufunc, np.copyto
        for i, (reqs, reds, copies) in enumerate(self.steps):
            self.at = i
            if reqs:
                MPI.Prequest.Startall(reqs)
                MPI.Request.Waitall(reqs)
            for dst, src in reds:
                ufunc(dst, src, out=dst)
            for dst, src in copies:
                copyto(dst, src)
        self.at = -1

    def close(self) -> None:
        for reqs, _, _ in self.steps:
            for r in reqs:
                r.Free()
        self.steps = []


def buffer_spec(view: np.ndarray | None, mpitype: MPI.Datatype) -> list[Any] | None:
    """``[buffer, datatype]`` made once: mpi4py then skips inferring the type from the array on
    every call, which is most of what a Python-timed call costs over OSU's C loop at small
    sizes."""
    if view is None:
        return None
    return [MPI.buffer(view), mpitype]


class MpiTransport:
    """Host (numpy) buffers over an mpi4py communicator of its own (a Dup of the one given);
    buffers page-aligned with transparent huge pages ``off``/``on``/``auto`` (see
    :mod:`kernels.transports.hostmem`)."""

    name = "mpi"
    family = "mpi"

    def __init__(self, comm: MPI.Comm, hugepages: str = "off") -> None:
        self.comm = comm.Dup()
        self.rank = self.comm.rank
        self.size = self.comm.size
        self.hugepages = hugepages

    def allocate(self, count: int, dtype: str) -> np.ndarray:
        from kernels.transports.hostmem import allocate

        return allocate(count, dtype, self.hugepages)

    def upload(self, buf: np.ndarray, host: np.ndarray) -> None:
        np.copyto(buf, host)

    def download(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def compile(self, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray | None,
                op: ReduceOp) -> Plan:
        return MpiPlan(self.comm, schedule, buf, scratch, op)

    def vendor(self, spec: Collective, buf: np.ndarray, layout: Layout, op: ReduceOp | None,
               root: int) -> Plan:
        send, recv = views(buf, layout)
        t = MPI.Datatype.fromcode(buf.dtype.char)  # what mpi4py infers from the array itself
        comm = self.comm
        return Bound(vendor_call(spec, "mpi")(VendorArgs(
            comm, buffer_spec(send, t), buffer_spec(recv, t), MPI_OPS[op.name] if op else None,
            root, comm.rank, comm.size, layout.count)), keep=(send, recv))

    def barrier(self) -> None:
        self.comm.Barrier()

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self.comm.Free()
