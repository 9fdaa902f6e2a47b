"""CUDA-IPC transport: ``transport: cuda-ipc``, ranks of one node pulling from each other's
device buffers, the mechanism NCCL uses inside a node (docs/gpu.md).

At compile time every rank's IPC handle of ``buf`` and its send list are all-gathered over MPI,
so each receive becomes a ``memcpyAsync`` from the sender's ``buf`` at the sender's offsets (into
``buf`` or, to reduce, ``scratch``). Per step: pulls, reductions, a stream sync, an MPI barrier.
The IR lets a step write only elements its rank does not send, so peers' reads of step i never
race its writes, and the barrier orders step i+1's writes after them; one more barrier opens each
run, as the caller may have just uploaded input. Buffers are plain ``cudaMalloc`` allocations,
not pool blocks, so a handle maps exactly the buffer's base. ``native`` is MPI, as in
``mpi-cupy``; no CUDA-graph variant (host barriers sit between steps).
"""

from __future__ import annotations

import weakref
from typing import Any

from mpi4py import MPI

from kernels.ops import ReduceOp
from kernels.schedule import Schedule
from kernels.transports.base import Plan
from kernels.transports.gpu import (
    GpuContext,
    Local,
    agree,
    finish,
    local_work,
    open_device,
    reducer,
)
from kernels.transports.gpu_plan import (
    logical_dtype,
    match_pulls,
    plan_steps,
    send_lists,
    storage_dtype,
)
from kernels.transports.mpi_cupy import MpiCupyTransport


class PeerMaps:
    """Peers' buffers opened in this process, keyed by the all-gathered handles (identical on
    every rank, so every rank takes the same branch) and counted by the plans using them."""

    def __init__(self, comm: MPI.Comm, runtime: Any) -> None:
        self._comm, self._rt = comm, runtime
        self._open: dict[tuple[bytes, ...], tuple[list[int | None], int]] = {}

    def acquire(self, buf: Any) -> tuple[tuple[bytes, ...], list[int | None]]:
        handles = tuple(self._comm.allgather(bytes(self._rt.ipcGetMemHandle(buf.data.ptr))))
        if handles in self._open:
            ptrs, n = self._open[handles]
        else:
            me = self._comm.rank
            ptrs, n = [None if r == me else int(self._rt.ipcOpenMemHandle(h))
                       for r, h in enumerate(handles)], 0
        self._open[handles] = (ptrs, n + 1)
        return handles, ptrs

    def release(self, key: tuple[bytes, ...]) -> None:
        """Drop one use; the last closes the peers' mappings, then waits for every rank to have
        closed theirs (collective then: the counts are alike on every rank). CUDA leaves it
        undefined when an exporter frees memory a peer still has open, and the caller may free
        ``buf`` right after this returns."""
        ptrs, n = self._open[key]
        if n > 1:
            self._open[key] = (ptrs, n - 1)
            return
        del self._open[key]
        for p in ptrs:
            if p is not None:
                self._rt.ipcCloseMemHandle(p)
        self._comm.Barrier()

    def close(self) -> None:
        for key in list(self._open):
            self._open[key] = (self._open[key][0], 1)
            self.release(key)


class IpcPlan:
    """Per step (every step, idle ones too: the barrier is collective): pulls, reductions."""

    def __init__(self, tr: CudaIpcTransport, schedule: Schedule, buf: Any, scratch: Any,
                 op: ReduceOp) -> None:
        ctx = tr.ctx
        rt = ctx.cp.cuda.runtime
        self._comm, self._stream, self._maps = tr.comm, ctx.stream, tr.peers
        self._copy, self._kind = rt.memcpyAsync, rt.memcpyDefault
        self._reduce = reducer(ctx.cp, logical_dtype(buf.dtype.name), op.name)
        self._key, peers = tr.peers.acquire(buf)
        steps = plan_steps(schedule, buf.itemsize, keep_idle=True)
        matched = match_pulls(tr.rank, steps, tr.comm.allgather(send_lists(steps)))
        dev = {False: buf.data.ptr, True: scratch.data.ptr if scratch is not None else 0}
        self._steps: list[tuple[list[tuple[int, int, int]], Local]] = []
        for st, pulls in zip(steps, matched):
            copies = []
            for x in pulls:
                src = peers[x.peer]
                assert src is not None, "a schedule never receives from its own rank"
                copies.append((dev[x.into_scratch] + x.dst_offset, src + x.src_offset, x.nbytes))
            self._steps.append((copies, local_work(st, buf, scratch)))

    def run(self) -> None:
        stream, copy, kind, reduce = self._stream, self._copy, self._kind, self._reduce
        barrier, sptr = self._comm.Barrier, stream.ptr
        with stream:
            barrier()  # every peer's input is in place
            for pulls, local in self._steps:
                for dst, src, n in pulls:
                    copy(dst, src, n, kind, sptr)
                finish(reduce, local)
                stream.synchronize()
                barrier()  # nobody overwrites what a peer may still be reading

    def close(self) -> None:
        if self._key is not None:
            self._maps.release(self._key)
            self._key = None
        self._steps = []


class CudaIpcTransport(MpiCupyTransport):
    """``mpi-cupy`` with schedules run as IPC pulls (its ``native`` stays the MPI call)."""

    name = "cuda-ipc"

    def __init__(self, comm: MPI.Comm, ctx: GpuContext) -> None:
        super().__init__(comm, ctx)
        self.peers = PeerMaps(self.comm, self.cp.cuda.runtime)

    def allocate(self, count: int, dtype: str) -> Any:
        """A zeroed buffer in its own cudaMalloc (the IPC handle maps the whole allocation)."""
        cp = self.cp
        dt = cp.dtype(storage_dtype(dtype))
        mem = cp.cuda.Memory(max(1, count * dt.itemsize))
        arr = cp.ndarray((count,), dtype=dt, memptr=cp.cuda.MemoryPointer(mem, 0))
        arr.fill(0)
        self.raw_bytes += mem.size
        weakref.finalize(arr, self._freed, mem.size)  # cupy.cuda.Memory takes no weakrefs
        return arr

    def _freed(self, nbytes: int) -> None:
        self.raw_bytes -= nbytes

    def compile(self, schedule: Schedule, buf: Any, scratch: Any, op: ReduceOp) -> Plan:
        return IpcPlan(self, schedule, buf, scratch, op)

    def close(self) -> None:
        self.synchronize()
        self.peers.close()
        super().close()


def single_node_reason(node_size: int, world: int) -> str | None:
    if node_size == world:
        return None
    return (f"CUDA IPC needs every rank on one node; this job has {node_size} of {world} ranks "
            f"on this host (use nccl or mpi-cupy across nodes)")


def from_mpi(comm: MPI.Comm) -> CudaIpcTransport:
    ctx = open_device(comm)
    try:
        agree(comm, single_node_reason(ctx.local.size, comm.size))
        return CudaIpcTransport(comm, ctx)
    except BaseException:
        ctx.close()
        raise
