"""Run under mpiexec by tests/collective/test_variants_mpi.py: the vendor MPI_Allreduce (sum) of
float64 values spread over 16 orders of magnitude, seeded by rank. Floating-point addition is not
associative, so the bits of the result depend on the order the library's algorithm adds the
ranks' buffers in: a fingerprint of the algorithm, the same on every run of one algorithm.
Rank 0 prints the sha1 of the result; every rank checks that all ranks hold the same bits."""

from __future__ import annotations

import hashlib

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rng = np.random.default_rng(comm.rank)
x = rng.standard_normal(4096) * 10.0 ** rng.integers(-8, 8, 4096)
y = np.empty_like(x)
comm.Allreduce(x, y)
digest = hashlib.sha1(y.tobytes()).hexdigest()
digests = comm.gather(digest, root=0)
if comm.rank == 0:
    assert len(set(digests)) == 1, digests
    print(digest)
