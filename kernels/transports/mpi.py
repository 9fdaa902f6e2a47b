"""MPI transport: schedules on numpy buffers through mpi4py persistent requests."""

from __future__ import annotations

from typing import Any

import numpy as np
from mpi4py import MPI

from kernels.ops import ReduceOp
from kernels.schedule import Range, Schedule
from kernels.transports.base import Plan

TAG = 7
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
# Large transfers go as segments of this many bytes, so each reduction starts as soon as its
# segment lands and reads it while it is still in cache (1.0-1.2x faster from 1 MiB up here).
SEGMENT_BYTES = 256 * 1024


def _bytes(view: np.ndarray) -> list[Any]:
    return [view.view(np.uint8), MPI.BYTE]


def segments(rng: Range, seg: int) -> list[tuple[int, int]]:
    """``rng`` cut into pieces of at most ``seg`` elements. Both sides of a message cut it the
    same way (it depends only on the range's size), so the pieces match in posting order."""
    return [(a, min(a + seg, rng.stop)) for a in range(rng.start, rng.stop, seg)]


class MpiPlan:
    """A schedule bound to buffers: per step, persistent receives and sends, then reductions.

    Receives that reduce land in ``scratch`` at the same offsets (a step never writes an element
    twice, so a scratch buffer of ``count`` elements always fits) and are folded in as each
    segment completes (Waitsome). Steps in which this rank has nothing to do are dropped.
    """

    def __init__(self, comm: MPI.Comm, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray,
                 op: ReduceOp, segment_bytes: int = SEGMENT_BYTES) -> None:
        self._ufunc = op.ufunc
        seg = max(1, segment_bytes // buf.itemsize)
        self._steps: list[tuple[list[MPI.Prequest], dict[int, tuple[np.ndarray, np.ndarray]]]] = []
        for st in schedule.steps:
            reqs: list[MPI.Prequest] = []
            reds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for rv in st.recvs:
                for a, b in segments(rv.range, seg):
                    if rv.reduce:
                        reds[len(reqs)] = (buf[a:b], scratch[a:b])
                    target = scratch if rv.reduce else buf
                    reqs.append(comm.Recv_init(_bytes(target[a:b]), rv.peer, TAG))
            for s in st.sends:
                for a, b in segments(s.range, seg):
                    reqs.append(comm.Send_init(_bytes(buf[a:b]), s.peer, TAG))
            if reqs:
                self._steps.append((reqs, reds))

    def run(self) -> None:
        ufunc, waitsome = self._ufunc, MPI.Request.Waitsome
        for reqs, reds in self._steps:
            MPI.Prequest.Startall(reqs)
            if not reds:
                MPI.Request.Waitall(reqs)
                continue
            while (done := waitsome(reqs)) is not None:
                for i in done:
                    pair = reds.get(i)
                    if pair is not None:
                        ufunc(pair[0], pair[1], out=pair[0])

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

    def __init__(self, comm: MPI.Comm, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.comm = comm.Dup()
        self.rank = self.comm.rank
        self.size = self.comm.size
        self.segment_bytes = segment_bytes

    def allocate(self, count: int, dtype: str) -> np.ndarray:
        return np.zeros(count, dtype=dtype)

    def upload(self, buf: np.ndarray, host: np.ndarray) -> None:
        np.copyto(buf, host)

    def download(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def compile(self, schedule: Schedule, buf: np.ndarray, scratch: np.ndarray,
                op: ReduceOp) -> Plan:
        return MpiPlan(self.comm, schedule, buf, scratch, op, self.segment_bytes)

    def vendor(self, buf: np.ndarray, op: ReduceOp) -> Plan:
        return VendorPlan(self.comm, buf, op)

    def barrier(self) -> None:
        self.comm.Barrier()

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self.comm.Free()
