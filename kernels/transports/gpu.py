"""Device helpers shared by the CuPy transports (``nccl``, ``nccl-graph``, ``mpi-cupy``,
``cuda-ipc``): availability checks with skip reasons, device selection, the stream, CUDA-event
timing, device memory accounting, reductions and buffer handling.

CuPy is imported inside functions only, so every transport module imports without it; the pure
logic (step and pull plans, staging, bfloat16) lives in :mod:`gpu_plan`, tested on CPU.
"""

from __future__ import annotations

import contextlib
import socket
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from mpi4py import MPI

from kernels.transports.base import Plan, TransportUnavailable
from kernels.transports.gpu_plan import (
    CUPY_UFUNCS,
    StepPlan,
    bf16_bits_to_f32,
    bf16_kernel_body,
    device_for,
    f32_to_bf16_bits,
    logical_dtype,
    storage_dtype,
)

Reduce = Callable[[Any, Any], None]  # (dst, src): dst = op(dst, src) in place, on the stream


def probe_cupy(need_nccl: bool = False) -> tuple[Any, str | None]:
    """``(cupy, None)`` when a CUDA device (and NCCL if asked) is usable, else ``(None, why)``."""
    try:
        import cupy
    except ImportError:
        return None, "CuPy missing (pip install -e '.[gpu]', cupy-cuda12x or cupy-cuda13x)"
    except Exception as e:  # a broken CUDA install can fail at import; keep it one line
        return None, f"CuPy does not import: {type(e).__name__}: {str(e).splitlines()[0]}"
    try:
        ok = bool(cupy.cuda.is_available())
    except Exception:
        ok = False
    if not ok:
        return None, "no CUDA device (cupy.cuda.is_available() is False)"
    if need_nccl:
        with warnings.catch_warnings():  # CuPy warns at import when libnccl is missing
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
        if not getattr(nccl, "available", False):
            return None, ("no NCCL (CuPy cannot load libnccl.so.2: pip install nvidia-nccl-cu12, "
                          "or -cu13 for cupy-cuda13x)")
    return cupy, None


def agree(comm: MPI.Comm, reason: str | None) -> None:
    """Raise :class:`TransportUnavailable` on every rank if any rank has a reason, so no rank
    goes on to a collective set-up that its peers skipped."""
    reasons = comm.allgather(reason)
    bad = [(r, m) for r, m in enumerate(reasons) if m]
    if not bad:
        return
    rank, msg = bad[0]
    everywhere = len(bad) == comm.size and len({m for _, m in bad}) == 1
    raise TransportUnavailable(msg if everywhere else f"rank {rank}: {msg}")


@dataclass
class GpuContext:
    """The device, stream and node communicator of one rank."""

    cp: Any
    device: int
    stream: Any
    local: MPI.Comm  # ranks on this host (COMM_TYPE_SHARED)
    host: str

    def close(self) -> None:
        if self.local != MPI.COMM_NULL:
            self.local.Free()


def open_device(comm: MPI.Comm, need_nccl: bool = False) -> GpuContext:
    """Check CuPy/CUDA/NCCL on every rank (one skip reason for all), then pick the device from
    the local rank and make a non-blocking stream current (capturable into CUDA graphs)."""
    cp, reason = probe_cupy(need_nccl)
    agree(comm, reason)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    dev = device_for(local.rank, cp.cuda.runtime.getDeviceCount())
    cp.cuda.Device(dev).use()
    stream = cp.cuda.Stream(non_blocking=True)
    stream.use()
    return GpuContext(cp, dev, stream, local, socket.gethostname())


def reducer(cp: Any, dtype: str, op: str) -> Reduce:
    """In-place ``dst = op(dst, src)`` as a CuPy element-wise kernel on the current stream."""
    if dtype == "bfloat16":  # CuPy has no bfloat16: uint16 bits, float32 arithmetic
        kernel = cp.ElementwiseKernel("uint16 src", "uint16 dst", bf16_kernel_body(op),
                                      f"commbench_bf16_{op}")
        return lambda dst, src: kernel(src, dst)
    ufunc = getattr(cp, CUPY_UFUNCS[op])
    return lambda dst, src: ufunc(dst, src, out=dst)


Local = tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]  # a step's reductions, copies


def local_work(st: StepPlan, buf: Any, scratch: Any) -> Local:
    """A step's reductions (buf view, scratch view) and local copies (destination, source)."""
    return ([(buf[a:b], scratch[a:b]) for a, b in st.reduces],
            [(buf[d:d + n], buf[s:s + n]) for s, d, n in st.copies])


def finish(reduce: Reduce, local: Local) -> None:
    """Queue a step's reductions, then its local copies, on the current stream."""
    for dst, src in local[0]:
        reduce(dst, src)
    for dst, src in local[1]:
        dst[...] = src


def to_storage(host: np.ndarray, dtype: str) -> np.ndarray:
    """Host values (float32 carrier for bfloat16) as the bits a device buffer stores."""
    if dtype == "bfloat16":
        return f32_to_bf16_bits(host)
    return np.ascontiguousarray(host, dtype=dtype)


def from_storage(stored: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_bits_to_f32(stored) if dtype == "bfloat16" else stored


class EventClock:
    """CUDA events recorded on the transport's stream around one iteration (device time)."""

    def __init__(self, cp: Any, stream: Any) -> None:
        self._cp, self._stream = cp, stream
        self._start, self._stop = cp.cuda.Event(), cp.cuda.Event()

    def start(self) -> None:
        self._start.record(self._stream)

    def stop(self) -> None:
        self._stop.record(self._stream)

    def elapsed_us(self) -> float:
        self._stop.synchronize()
        return float(self._cp.cuda.get_elapsed_time(self._start, self._stop)) * 1e3


def device_used(cp: Any) -> int:
    free, total = cp.cuda.runtime.memGetInfo()
    return int(total - free)


class GraphPlan:
    """One iteration of ``inner`` captured once as a CUDA graph and launched per run (like
    nccl-tests ``-G``, but one iteration per graph so every iteration is still timed alone).

    ``inner`` runs once eagerly first so kernels are compiled and NCCL peers are connected
    outside the capture. Only for plans whose work is all on the stream (no host MPI inside)."""

    def __init__(self, inner: Plan, stream: Any) -> None:
        self._inner, self._stream = inner, stream
        inner.run()
        stream.synchronize()
        # CuPy refuses to capture on the legacy default stream (ptr 0/1); ours is non-blocking.
        # Relaxed mode (CuPy's default) so NCCL's set-up calls are not refused during capture.
        stream.begin_capture()
        try:
            inner.run()
        except BaseException:
            # End the capture so the stream is usable again; the first error is the one to see.
            with contextlib.suppress(Exception):
                stream.end_capture()
            raise
        self._graph = stream.end_capture()

    def run(self) -> None:
        self._graph.launch(stream=self._stream)

    def close(self) -> None:
        self._inner.close()
        self._graph = None


class DeviceTransport:
    """What the CuPy transports share: buffers, upload/download, barrier, stream sync, the
    device clock and memory report the harness reads. Subclasses add compile/vendor."""

    name = "device"

    def __init__(self, comm: MPI.Comm, ctx: GpuContext) -> None:
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.rank, self.comm.size
        self.ctx = ctx
        self.transport_bytes = 0  # device memory the transport itself took (communicator)
        self.raw_bytes = 0  # device memory allocated outside CuPy's pool (IPC buffers)

    @property
    def cp(self) -> Any:
        return self.ctx.cp

    def allocate(self, count: int, dtype: str) -> Any:
        return self.cp.zeros(count, dtype=storage_dtype(dtype))

    def upload(self, buf: Any, host: np.ndarray) -> None:
        buf.set(to_storage(host, logical_dtype(buf.dtype.name)), stream=self.ctx.stream)
        self.ctx.stream.synchronize()

    def download(self, buf: Any) -> np.ndarray:
        self.ctx.stream.synchronize()
        out = buf.get(stream=self.ctx.stream)
        self.ctx.stream.synchronize()
        return from_storage(out, logical_dtype(buf.dtype.name))

    def barrier(self) -> None:
        self.comm.Barrier()

    def synchronize(self) -> None:
        self.ctx.stream.synchronize()

    def device_clock(self) -> EventClock:
        return EventClock(self.cp, self.ctx.stream)

    def memory(self) -> dict[str, int]:
        """Device memory now: ``held`` = live CuPy pool bytes + raw allocations of this
        transport; ``device_used`` counts every process on the GPU (cudaMemGetInfo)."""
        pool = self.cp.get_default_memory_pool()
        free, total = self.cp.cuda.runtime.memGetInfo()
        return {"held": int(pool.used_bytes()) + self.raw_bytes,
                "pool_reserved": int(pool.total_bytes()), "device_used": int(total - free),
                "device_total": int(total), "transport": self.transport_bytes}

    def close(self) -> None:
        self.synchronize()
        self.comm.Free()
        self.ctx.close()
