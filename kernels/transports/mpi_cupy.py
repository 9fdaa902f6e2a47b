"""MPI transport on CuPy buffers: ``transport: mpi-cupy`` (docs/gpu.md).

Device buffers go to MPI directly when the library is CUDA-aware
(:func:`~kernels.transports.gpu_plan.cuda_awareness`), else every message is staged through
pinned host mirrors of ``buf`` and ``scratch``. Either way the stream is synchronised before MPI
touches a buffer. ``native`` is the collective's MPI call; bfloat16 reductions are always
staged, reduced by a user-defined MPI op.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

from kernels.collective import Collective, Layout, VendorArgs
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Plan, vendor_call, views
from kernels.transports.gpu import (
    DeviceTransport,
    GpuContext,
    Local,
    finish,
    local_work,
    open_device,
    reducer,
)
from kernels.transports.gpu_plan import (
    CudaAwareness,
    bf16_reduce_into,
    cuda_awareness,
    logical_dtype,
    plan_steps,
    query_cuda_support,
)
from kernels.transports.mpi import MPI_OPS

TAG = 11


def bf16_mpi_op(op: str) -> MPI.Op:
    """A commutative user-defined MPI op on bfloat16 bits (``MPI.UINT16_T`` host buffers);
    MPI has no bfloat16 type. The caller frees it."""

    def fn(inbuf: Any, inoutbuf: Any, datatype: MPI.Datatype) -> None:
        bf16_reduce_into(np.frombuffer(inoutbuf, dtype=np.uint16),
                         np.frombuffer(inbuf, dtype=np.uint16), op)

    return MPI.Op.Create(fn, commute=True)


class MpiCupyPlan:
    """Persistent requests per step on the device buffers (CUDA-aware MPI: no ``mirror``), or
    on pinned host mirrors: then the send ranges go device->host before the step's requests and
    the received ranges host->device after. Reductions and copies run on the device."""

    def __init__(self, comm: MPI.Comm, ctx: GpuContext, schedule: Schedule, buf: Any,
                 scratch: Any, op: ReduceOp, mirror: Callable[[Any], np.ndarray] | None) -> None:
        rt = ctx.cp.cuda.runtime
        self._stream, self._copy = ctx.stream, rt.memcpyAsync
        self._d2h, self._h2d = rt.memcpyDeviceToHost, rt.memcpyHostToDevice
        self._reduce = reducer(ctx.cp, logical_dtype(buf.dtype.name), op.name)
        if mirror is None:
            hb = buf.view(ctx.cp.uint8)
            hs = scratch.view(ctx.cp.uint8) if scratch is not None else hb
        else:
            hb = mirror(buf).view(np.uint8)
            hs = mirror(scratch).view(np.uint8) if scratch is not None else hb
        dev = {False: buf.data.ptr, True: scratch.data.ptr if scratch is not None else 0}
        host = {False: hb, True: hs}
        self._steps: list[tuple[list[tuple[int, int, int]], list[MPI.Prequest],
                                list[tuple[int, int, int]], Local]] = []
        for st in plan_steps(schedule, buf.itemsize):
            reqs = [comm.Recv_init([host[x.into_scratch][x.offset:x.offset + x.nbytes], MPI.BYTE],
                                   x.peer, TAG) for x in st.recvs]
            reqs += [comm.Send_init([hb[x.offset:x.offset + x.nbytes], MPI.BYTE], x.peer, TAG)
                     for x in st.sends]
            d2h: list[tuple[int, int, int]] = []
            h2d: list[tuple[int, int, int]] = []
            if mirror is not None:
                d2h = [(hb.ctypes.data + x.offset, dev[False] + x.offset, x.nbytes)
                       for x in st.sends]
                h2d = [(dev[x.into_scratch] + x.offset,
                        host[x.into_scratch].ctypes.data + x.offset, x.nbytes) for x in st.recvs]
            self._steps.append((d2h, reqs, h2d, local_work(st, buf, scratch)))

    def run(self) -> None:
        stream, copy, reduce = self._stream, self._copy, self._reduce
        sptr = stream.ptr
        with stream:
            for d2h, reqs, h2d, local in self._steps:
                for dst, src, n in d2h:
                    copy(dst, src, n, self._d2h, sptr)
                # MPI reads buf (or its mirror) once the last step's reductions and this step's
                # device->host copies are done, and the last step's host->device copies no
                # longer read the mirror that this step's receives overwrite.
                stream.synchronize()
                if reqs:
                    MPI.Prequest.Startall(reqs)
                    MPI.Request.Waitall(reqs)
                for dst, src, n in h2d:
                    copy(dst, src, n, self._h2d, sptr)
                finish(reduce, local)

    def close(self) -> None:
        for _, reqs, _, _ in self._steps:
            for r in reqs:
                r.Free()
        self._steps = []


class MpiVendorPlan:
    """A collective's MPI call on the device workspace (CUDA-aware) or on its pinned mirror
    (bfloat16 reductions always staged, reduced by a user-defined op on the 16-bit words)."""

    def __init__(self, comm: MPI.Comm, ctx: GpuContext, spec: Collective, buf: Any,
                 layout: Layout, op: ReduceOp | None, root: int, aware: bool,
                 mirror: Callable[[Any], np.ndarray]) -> None:
        self._buf, self._stream = buf, ctx.stream
        dtype = logical_dtype(buf.dtype.name)
        self._user_op = bf16_mpi_op(op.name) if dtype == "bfloat16" and op else None
        mpi_op = self._user_op or (MPI_OPS[op.name] if op else None)
        self._host = None if aware and self._user_op is None else mirror(buf)
        send, recv = views(buf if self._host is None else self._host, layout)
        self._call = vendor_call(spec, "mpi")(VendorArgs(comm, send, recv, mpi_op, root, comm.rank,
                                                         comm.size, layout.count))

    def run(self) -> None:
        stream, host = self._stream, self._host
        if host is not None:
            self._buf.get(stream=stream, out=host)
        stream.synchronize()
        self._call()
        if host is not None:
            self._buf.set(host, stream=stream)

    def close(self) -> None:
        if self._user_op is not None:
            self._user_op.Free()
            self._user_op = None


class PinnedMirrors:
    """Pinned host copies of the current group's device buffers (buf, scratch), made once per
    buffer and shared by every plan of the group; older ones are dropped.

    Keyed by address, shape and dtype: a freed buffer's address comes back from the pool for the
    next group, often with the same byte size but another dtype (float32/int32, float16/bfloat16),
    and ``ndarray.get(out=)`` / ``set`` refuse a host array of another dtype (TypeError)."""

    def __init__(self, keep: int = 2) -> None:
        self._keep = keep
        self._by_ptr: dict[tuple[int, tuple[int, ...], str], np.ndarray] = {}

    def __call__(self, dev: Any) -> np.ndarray:
        import cupyx

        key = (int(dev.data.ptr), tuple(dev.shape), dev.dtype.str)
        if key not in self._by_ptr:
            while len(self._by_ptr) >= self._keep:
                self._by_ptr.pop(next(iter(self._by_ptr)))
            self._by_ptr[key] = cupyx.empty_pinned(dev.shape, dtype=dev.dtype)
        return self._by_ptr[key]

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._by_ptr.values())


class MpiCupyTransport(DeviceTransport):
    name = "mpi-cupy"
    family = "mpi"

    def __init__(self, comm: MPI.Comm, ctx: GpuContext) -> None:
        super().__init__(comm, ctx)
        self.awareness = detect_awareness()
        self.mirrors = PinnedMirrors()

    def compile(self, schedule: Schedule, buf: Any, scratch: Any, op: ReduceOp) -> Plan:
        return MpiCupyPlan(self.comm, self.ctx, schedule, buf, scratch, op,
                           None if self.awareness.aware else self.mirrors)

    def vendor(self, spec: Collective, buf: Any, layout: Layout, op: ReduceOp | None,
               root: int) -> Plan:
        return MpiVendorPlan(self.comm, self.ctx, spec, buf, layout, op, root,
                             self.awareness.aware, self.mirrors)


def detect_awareness() -> CudaAwareness:
    return cuda_awareness(os.environ, query_cuda_support())


def from_mpi(comm: MPI.Comm) -> MpiCupyTransport:
    """``transport: mpi-cupy``: any number of ranks per GPU (device = local rank mod GPUs)."""
    ctx = open_device(comm)
    try:
        return MpiCupyTransport(comm, ctx)
    except BaseException:
        ctx.close()
        raise
