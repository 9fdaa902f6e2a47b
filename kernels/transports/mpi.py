"""MPI transport: schedules on numpy buffers through mpi4py persistent requests."""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Plan

TAG = 7
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}


def _bytes(view: np.ndarray) -> list[Any]:
    return [view.view(np.uint8), MPI.BYTE]


class MpiPlan:
    """A schedule bound to buffers: per step, persistent receives and sends, then reductions.

    Receives that reduce land in ``scratch`` at the same offsets (a step never writes an element
    twice, so a scratch buffer of ``count`` elements always fits) and are folded in after the
    step's Waitall. Steps in which this rank has nothing to do are dropped.
    """

    def __init__(self, comm: MPI.Comm, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray,
                 op: ReduceOp) -> None:
        self._ufunc = op.ufunc
        self._steps: list[tuple[list[MPI.Prequest], list[tuple[np.ndarray, np.ndarray]]]] = []
        for st in schedule.steps:
            reqs: list[MPI.Prequest] = []
            reds: list[tuple[np.ndarray, np.ndarray]] = []
            for rv in st.recvs:
                a, b = rv.range.start, rv.range.stop
                if rv.reduce:
                    reqs.append(comm.Recv_init(_bytes(scratch[a:b]), rv.peer, TAG))
                    reds.append((buf[a:b], scratch[a:b]))
                else:
                    reqs.append(comm.Recv_init(_bytes(buf[a:b]), rv.peer, TAG))
            for s in st.sends:
                reqs.append(comm.Send_init(_bytes(buf[s.range.start : s.range.stop]), s.peer, TAG))
            if reqs:
                self._steps.append((reqs, reds))

    def run(self) -> None:
        ufunc = self._ufunc
        for reqs, reds in self._steps:
            MPI.Prequest.Startall(reqs)
            MPI.Request.Waitall(reqs)
            for dst, src in reds:
                ufunc(dst, src, out=dst)

    def close(self) -> None:
        for reqs, _ in self._steps:
            for r in reqs:
                r.Free()
        self._steps = []


class VendorPlan:
    """``MPI_Allreduce`` in place: the baseline."""

    def __init__(self, comm: MPI.Comm, buf: np.ndarray, op: ReduceOp) -> None:
        self._comm, self._buf, self._op = comm, buf, MPI_OPS[op.name]

    def run(self) -> None:
        self._comm.Allreduce(MPI.IN_PLACE, self._buf, self._op)

    def close(self) -> None:
        pass


class MpiTransport:
    """Host (numpy) buffers over an mpi4py communicator of its own (a Dup of the one given)."""

    name = "mpi"

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm.Dup()
        self.rank = self.comm.rank
        self.size = self.comm.size

    def allocate(self, count: int, dtype: str) -> np.ndarray:
        return np.zeros(count, dtype=dtype)

    def upload(self, buf: np.ndarray, host: np.ndarray) -> None:
        np.copyto(buf, host)

    def download(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def compile(self, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray,
                op: ReduceOp) -> Plan:
        return MpiPlan(self.comm, schedule, buf, scratch, op)

    def vendor(self, buf: np.ndarray, op: ReduceOp) -> Plan:
        return VendorPlan(self.comm, buf, op)

    def barrier(self) -> None:
        self.comm.Barrier()

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self.comm.Free()
