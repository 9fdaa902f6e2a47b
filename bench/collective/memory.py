"""Host memory one rank of a collective sweep needs, predicted before anything launches.

What the harness holds at a case's peak (see ``bench/collective/harness.py``): the workspace (the larger of
the in-place layout the schedules use and the separate send/receive layout ``native`` uses), a
workspace-sized scratch for reducing schedules, and bounded slices (``data.BLOCK`` elements of
int64 index/value arrays at a time: input and sentinel are made and uploaded in slices, never
as a whole host copy; the check compares in slices). On top sits the interpreter with numpy and
mpi4py loaded (``BASE``: a resident set measured with ``/usr/bin/time``, rounded up).
``python -m benchmarks.memcheck`` measures peaks against this prediction
(``benchmarks/results/memcheck.md``).
"""

from __future__ import annotations

from bench.collective.data import BLOCK
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
