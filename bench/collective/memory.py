"""Host memory one rank of a collective sweep needs, predicted before anything launches
(docs/measuring.md, "Memory a case needs"; ``python -m benchmarks.memcheck`` measures it)."""

from __future__ import annotations

from bench.measure.data import BLOCK
from kernels.collective import Collective

# Interpreter + numpy + mpi4py + the CLI's imports and MPI's own buffers: fitted to the peaks
# ``python -m benchmarks.memcheck`` measures (all_reduce and all_gather, float32 and float16).
BASE = 160 << 20
CHECK_SLICES = 8  # int64 arrays of BLOCK elements alive at once while checking one slice


def rank_bytes(spec: Collective, count: int, itemsize: int, world: int) -> int:
    """Peak host bytes of one rank measuring ``spec`` on ``count`` elements (before rounding)."""
    n = max(spec.round_count(count, world), world if spec.divides else 1)
    inplace = spec.layout(n, world, 0).space
    separate = spec.layout(n, world, 0, separate=True).space
    workspace = max(inplace, separate) * itemsize
    scratch = inplace * itemsize if spec.reduces else 0
    return workspace + scratch + CHECK_SLICES * 8 * BLOCK + BASE
