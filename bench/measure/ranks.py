"""How a per-rank measurement becomes one number: the max over ranks, per iteration."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mpi4py import MPI


def worst_over_ranks(comm: MPI.Comm, samples: Sequence[float]) -> np.ndarray | None:
    """Element-wise max over the ranks of ``comm`` (the slowest rank of each iteration), on rank
    0; None on the other ranks. Collective: every rank passes as many samples."""
    mine = np.asarray(samples, dtype=np.float64)
    worst = np.empty_like(mine) if comm.rank == 0 else None
    comm.Reduce(mine, worst, op=MPI.MAX, root=0)
    return worst
