"""A hand-written ring AllReduce (Sendrecv + np.add), the yardstick for the schedule executor."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from kernels.chunks import split


class HandRing:
    """The ring as one would write it by hand; same chunking and step order as ``ring``."""

    def __init__(self, comm: MPI.Comm, buf: np.ndarray, scratch: np.ndarray) -> None:
        self.comm, self.buf, self.scratch = comm, buf, scratch
        self.chunks = [(c.start, c.stop) for c in split(buf.size, comm.size)]

    def run(self) -> None:
        comm, buf, tmp, ch = self.comm, self.buf, self.scratch, self.chunks
        p, r = comm.size, comm.rank
        right, left = (r + 1) % p, (r - 1) % p
        for s in range(p - 1):
            (a, b), (c, d) = ch[(r - s) % p], ch[(r - s - 1) % p]
            comm.Sendrecv(buf[a:b], right, recvbuf=tmp[c:d], source=left)
            np.add(buf[c:d], tmp[c:d], out=buf[c:d])
        for s in range(p - 1):
            (a, b), (c, d) = ch[(r - s + 1) % p], ch[(r - s) % p]
            comm.Sendrecv(buf[a:b], right, recvbuf=buf[c:d], source=left)

    def close(self) -> None:
        pass
