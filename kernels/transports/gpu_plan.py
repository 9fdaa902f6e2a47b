"""The pure half of the GPU transports, without CuPy and so tested on CPU: the byte-level step
plans their executors are compiled from, bfloat16 bits (numpy has no bfloat16; device buffers
hold its bits as uint16), the GPU-sharing rule NCCL imposes, and CUDA-aware MPI detection.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernels.ops import DTYPES
from kernels.schedule import Schedule

# Element types the device transports accept: the host ones plus bfloat16.
DEVICE_DTYPES: tuple[str, ...] = (*DTYPES, "bfloat16")
# How a dtype is stored in a CuPy array when CuPy has no such dtype (read back by logical_dtype).
STORAGE: dict[str, str] = {"bfloat16": "uint16"}
_LOGICAL = {v: k for k, v in STORAGE.items()}
# In-place CuPy reductions by op name: getattr(cupy, CUPY_UFUNCS[op])(dst, src, out=dst).
CUPY_UFUNCS: dict[str, str] = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}
# bfloat16 reductions in float32 arithmetic, rounded back to nearest-even (device and host agree).
BF16_EXPR: dict[str, str] = {"sum": "a + b", "prod": "a * b", "max": "fmaxf(a, b)",
                             "min": "fminf(a, b)"}
BF16_NUMPY: dict[str, np.ufunc] = {"sum": np.add, "prod": np.multiply, "max": np.fmax,
                                   "min": np.fmin}


def storage_dtype(dtype: str) -> str:
    return STORAGE.get(dtype, dtype)


def logical_dtype(storage: str) -> str:
    """The scenario dtype a device buffer of numpy dtype name ``storage`` holds."""
    return _LOGICAL.get(storage, storage)


# --- bfloat16 bits on the host --------------------------------------------------------------

def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even); returns the uint16 bit patterns.
    NaN payloads are not preserved (the benchmark's data never holds NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """Exact: every bfloat16 value is a float32 with the low 16 bits zero."""
    return (np.ascontiguousarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_reduce_into(dst: np.ndarray, src: np.ndarray, op: str) -> None:
    """``dst = op(dst, src)`` on uint16 bfloat16 bit arrays, computed like the device kernel."""
    res = BF16_NUMPY[op](bf16_bits_to_f32(dst), bf16_bits_to_f32(src))
    dst[...] = f32_to_bf16_bits(res)


def bf16_kernel_body(op: str) -> str:
    """CUDA body of the in-place bfloat16 ElementwiseKernel (``uint16 src`` -> ``uint16 dst``);
    the same arithmetic as :func:`bf16_reduce_into`. Not compiled on CPU-only machines."""
    return (
        "float a = __uint_as_float(((unsigned int)dst) << 16);\n"
        "float b = __uint_as_float(((unsigned int)src) << 16);\n"
        f"unsigned int u = __float_as_uint({BF16_EXPR[op]});\n"
        "u += 0x7FFFu + ((u >> 16) & 1u);\n"
        "dst = (unsigned short)(u >> 16);"
    )


# --- step plans in bytes --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Xfer:
    """One message of a step, in bytes from the start of the rank's buffer (the same offsets in
    the peer's buffer, the sender's ``buf`` and, for reducing receives, the receiver's
    ``scratch``)."""

    peer: int
    offset: int
    nbytes: int
    into_scratch: bool = False  # receives only: lands in scratch, then reduced into buf


@dataclass(frozen=True, slots=True)
class StepPlan:
    sends: tuple[Xfer, ...]
    recvs: tuple[Xfer, ...]
    reduces: tuple[tuple[int, int], ...]  # element ranges [a, b): buf[a:b] = op(buf, scratch)
    copies: tuple[tuple[int, int, int], ...] = ()  # (src, dst, n) elements: buf[dst:dst+n] = buf[src:..]

    @property
    def idle(self) -> bool:
        return not (self.sends or self.recvs or self.copies)


def plan_steps(schedule: Schedule, itemsize: int, keep_idle: bool = False) -> list[StepPlan]:
    """The schedule's steps as byte transfers plus element reductions and local copies (applied
    in that order after the step's transfers), made once at compile time.

    ``keep_idle`` keeps steps in which this rank neither sends nor receives: executors that
    synchronise all ranks per step (CUDA IPC) must still take part in every step."""
    out = []
    for st in schedule.steps:
        st = st.nonempty()
        sends = tuple(Xfer(s.peer, s.range.start * itemsize, s.range.size * itemsize)
                      for s in st.sends)
        recvs = tuple(Xfer(r.peer, r.range.start * itemsize, r.range.size * itemsize, r.reduce)
                      for r in st.recvs)
        reduces = tuple((r.range.start, r.range.stop) for r in st.recvs if r.reduce)
        copies = tuple((c.src.start, c.dst.start, c.dst.size) for c in st.copies)
        plan = StepPlan(sends, recvs, reduces, copies)
        if keep_idle or not plan.idle:
            out.append(plan)
    return out


# --- GPU placement --------------------------------------------------------------------------

def device_for(local_rank: int, device_count: int) -> int:
    """Rank -> device: local rank modulo the visible devices (one each when ranks <= GPUs)."""
    if device_count < 1:
        raise ValueError("no CUDA device visible")
    return local_rank % device_count


def shared_gpu_reason(bus_ids: Sequence[str], host: str) -> str | None:
    """Why NCCL cannot run with these ranks of one host (their GPUs' PCI bus ids), or None."""
    seen = Counter(bus_ids)
    shared = [(b, n) for b, n in seen.items() if n > 1]
    if not shared:
        return None
    bid, n = shared[0]
    return (f"{len(bus_ids)} ranks on {host} but {len(seen)} GPU(s) ({n} ranks share GPU {bid}); "
            f"NCCL needs one GPU per rank: use fewer ranks, or mpi-cupy / cuda-ipc to share a GPU")


# --- CUDA-aware MPI -------------------------------------------------------------------------

OVERRIDE_ENV = "COMMBENCH_MPI_CUDA_AWARE"  # "1"/"0": the user's word beats detection
# Environment switches that turn GPU support on in MPI libraries that have it built in.
AWARE_ENV: dict[str, str] = {"MPICH_GPU_SUPPORT_ENABLED": "1",  # Cray MPICH
                             "MPIR_CVAR_ENABLE_GPU": "1",  # MPICH >= 4
                             "MV2_USE_CUDA": "1"}  # MVAPICH2-GDR


@dataclass(frozen=True, slots=True)
class CudaAwareness:
    aware: bool
    how: str  # one line: what decided it


def cuda_awareness(env: Mapping[str, str], query: int | None) -> CudaAwareness:
    """Decide whether MPI may be handed device pointers.

    Order: the ``COMMBENCH_MPI_CUDA_AWARE`` override; the library's own answer
    (``MPIX_Query_cuda_support()``, Open MPI >= 4, MPICH >= 4, MVAPICH); else the vendor
    environment switches. Unknown means no: staging through pinned memory is always correct."""
    forced = env.get(OVERRIDE_ENV)
    if forced in ("0", "1"):
        return CudaAwareness(forced == "1", f"{OVERRIDE_ENV}={forced}")
    if query is not None:
        return CudaAwareness(bool(query), f"MPIX_Query_cuda_support() = {query}")
    for key, on in AWARE_ENV.items():
        if env.get(key) == on:
            return CudaAwareness(True, f"{key}={on} (library has no MPIX_Query_cuda_support)")
    return CudaAwareness(False, "no MPIX_Query_cuda_support and no GPU-support variable set")


def query_cuda_support() -> int | None:
    """``MPIX_Query_cuda_support()`` of the libmpi this process loaded (after mpi4py.MPI), or
    None where the library lacks it. libmpi is found in /proc/self/maps because mpi4py loads it
    privately, so ``ctypes.CDLL(None)`` does not see its symbols."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return None
    libs = sorted({line.split()[-1] for line in maps.read_text().splitlines()
                   if "/libmpi" in line and ".so" in line})
    for path in libs:
        fn = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn())
    return None


# --- CUDA IPC pulls -------------------------------------------------------------------------

SendList = list[list[tuple[int, int, int]]]  # per step: (peer, offset, nbytes) in posting order


def send_lists(steps: Sequence[StepPlan]) -> SendList:
    """This rank's sends per step, as exchanged once at compile time (see :func:`match_pulls`)."""
    return [[(x.peer, x.offset, x.nbytes) for x in st.sends] for st in steps]


@dataclass(frozen=True, slots=True)
class Pull:
    """Copy ``nbytes`` from ``peer``'s buf at ``src_offset`` into this rank's buf or scratch at
    ``dst_offset``."""

    peer: int
    src_offset: int
    dst_offset: int
    nbytes: int
    into_scratch: bool


def match_pulls(rank: int, steps: Sequence[StepPlan], sends: Sequence[SendList]) -> list[list[Pull]]:
    """Pair each receive with its sender's send (the IR matches them in posting order per pair)
    so a receiver reads the sender's own offsets. ``steps`` keep idle steps; ``sends[q]`` is rank
    q's :func:`send_lists`. Raises ValueError naming the step when a pair does not match."""
    out: list[list[Pull]] = []
    for i, st in enumerate(steps):
        taken: dict[int, int] = {}
        pulls = []
        for x in st.recvs:
            k = taken.get(x.peer, 0)
            theirs = [s for s in sends[x.peer][i] if s[0] == rank]
            if k >= len(theirs) or theirs[k][2] != x.nbytes:
                raise ValueError(f"step {i}: rank {rank}'s receive #{k} from rank {x.peer} "
                                 f"({x.nbytes} B) has no matching send")
            taken[x.peer] = k + 1
            pulls.append(Pull(x.peer, theirs[k][1], x.offset, x.nbytes, x.into_scratch))
        out.append(pulls)
    return out
