"""NCCL transport: commbench schedules on CuPy buffers through ``cupy.cuda.nccl`` (docs/gpu.md).

Each step's receives and sends go in one ``groupStart()/groupEnd()`` on the transport's stream,
as raw bytes (``NCCL_INT8``), then its reductions and copies as CuPy kernels on the same stream,
so a schedule is queued without a host synchronisation. ``nccl-graph`` captures every plan once as
a CUDA graph (:class:`~kernels.transports.gpu.GraphPlan`). NCCL refuses two ranks on one device,
so that case is a skip with the reason.
"""

from __future__ import annotations

from typing import Any

from mpi4py import MPI

from kernels.collective import Collective, Layout, NcclHandle, VendorArgs
from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Bound, Plan, vendor_call, views
from kernels.transports.gpu import (
    DeviceTransport,
    GpuContext,
    GraphPlan,
    agree,
    device_used,
    finish,
    local_work,
    open_device,
    reducer,
)
from kernels.transports.gpu_plan import logical_dtype, plan_steps, shared_gpu_reason

# NCCL constant names in cupy.cuda.nccl, by scenario dtype / op name.
NCCL_DTYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
               "bfloat16": "NCCL_BFLOAT16", "int32": "NCCL_INT32", "int64": "NCCL_INT64"}
NCCL_OPS = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "max": "NCCL_MAX", "min": "NCCL_MIN"}


def _nccl() -> Any:
    from cupy.cuda import nccl

    return nccl


class NcclPlan:
    """Per step: (receives, sends) as (pointer, bytes, peer), and the reductions after them."""

    def __init__(self, comm: Any, ctx: GpuContext, schedule: Schedule, buf: Any, scratch: Any,
                 op: ReduceOp) -> None:
        self._comm, self._stream, self._nccl = comm, ctx.stream, _nccl()
        self._reduce = reducer(ctx.cp, logical_dtype(buf.dtype.name), op.name)
        base = buf.data.ptr
        sbase = scratch.data.ptr if scratch is not None else 0
        self._steps = []
        for st in plan_steps(schedule, buf.itemsize):
            recvs = [((sbase if x.into_scratch else base) + x.offset, x.nbytes, x.peer)
                     for x in st.recvs]
            sends = [(base + x.offset, x.nbytes, x.peer) for x in st.sends]
            self._steps.append((recvs, sends, local_work(st, buf, scratch)))

    def run(self) -> None:
        nccl, comm, reduce = self._nccl, self._comm, self._reduce
        byte, sptr = nccl.NCCL_INT8, self._stream.ptr
        with self._stream:
            for recvs, sends, local in self._steps:
                if recvs or sends:
                    nccl.groupStart()
                    for ptr, n, peer in recvs:
                        comm.recv(ptr, n, byte, peer, sptr)
                    for ptr, n, peer in sends:
                        comm.send(ptr, n, byte, peer, sptr)
                    nccl.groupEnd()
                finish(reduce, local)

    def close(self) -> None:
        self._steps = []


class NcclTransport(DeviceTransport):
    name = "nccl"
    family = "nccl"

    def __init__(self, comm: MPI.Comm, ctx: GpuContext, graph: bool) -> None:
        super().__init__(comm, ctx)
        self.graph = graph
        if graph:
            self.name = "nccl-graph"
        nccl = _nccl()
        before = device_used(self.cp)
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = self.comm.bcast(uid, root=0)
        self.nccl_comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self.comm.Barrier()  # every rank's communicator is up before memory is read
        self.transport_bytes = max(0, device_used(self.cp) - before)

    def _wrap(self, plan: Plan) -> Plan:
        return GraphPlan(plan, self.ctx.stream) if self.graph else plan

    def compile(self, schedule: Schedule, buf: Any, scratch: Any, op: ReduceOp) -> Plan:
        return self._wrap(NcclPlan(self.nccl_comm, self.ctx, schedule, buf, scratch, op))

    def vendor(self, spec: Collective, buf: Any, layout: Layout, op: ReduceOp | None,
               root: int) -> Plan:
        nccl = _nccl()
        handle = NcclHandle(self.nccl_comm, nccl, self.ctx.stream.ptr,
                            getattr(nccl, NCCL_DTYPES[logical_dtype(buf.dtype.name)]))
        send, recv = views(buf, layout)
        return self._wrap(Bound(vendor_call(spec, "nccl")(VendorArgs(
            handle, send, recv, getattr(nccl, NCCL_OPS[op.name]) if op else None, root, self.rank,
            self.size, layout.count))))

    def close(self) -> None:
        self.synchronize()
        self.nccl_comm.destroy()
        super().close()


def _make(comm: MPI.Comm, graph: bool) -> NcclTransport:
    ctx = open_device(comm, need_nccl=True)
    try:
        bus_ids = ctx.local.allgather(ctx.cp.cuda.Device(ctx.device).pci_bus_id)
        agree(comm, shared_gpu_reason(bus_ids, ctx.host))
        return NcclTransport(comm, ctx, graph)
    except BaseException:
        ctx.close()
        raise


def from_mpi(comm: MPI.Comm) -> NcclTransport:
    """``transport: nccl``: one rank per GPU, device = local rank."""
    return _make(comm, graph=False)


def graph_from_mpi(comm: MPI.Comm) -> NcclTransport:
    """``transport: nccl-graph``: as ``nccl``, each plan launched as a captured CUDA graph."""
    return _make(comm, graph=True)
