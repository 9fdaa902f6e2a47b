"""Host memory one rank of a collective sweep needs, predicted before anything launches.

What the harness holds at a case's peak (see ``bench/harness.py``): the workspace (the larger of
the in-place layout the schedules use and the separate send/receive layout ``native`` uses), a
workspace-sized scratch for reducing schedules, this rank's input in the element type, and the
check's bounded slices (``data.BLOCK`` elements of int64 index/value arrays at a time). On top
sits the interpreter with numpy and mpi4py loaded (``BASE``, measured on the development VM with
``/usr/bin/time -v`` on an idle rank: about 60 MB; the figure is rounded up).
"""

from __future__ import annotations

from bench.data import BLOCK
from kernels.collective import Collective

BASE = 96 << 20  # interpreter + numpy + mpi4py + pandas-free rank, rounded up
CHECK_SLICES = 6  # int64 arrays of BLOCK elements alive at once while checking one slice


def rank_bytes(spec: Collective, count: int, itemsize: int, world: int) -> int:
    """Peak host bytes of one rank measuring ``spec`` on ``count`` elements (before rounding)."""
    n = max(spec.round_count(count, world), world if spec.divides else 1)
    inplace = spec.layout(n, world, 0).space
    separate = spec.layout(n, world, 0, separate=True).space
    workspace = max(inplace, separate) * itemsize
    scratch = inplace * itemsize if spec.reduces else 0
    host_in = spec.in_count(n, world) * itemsize
    return workspace + scratch + host_in + CHECK_SLICES * 8 * BLOCK + BASE
