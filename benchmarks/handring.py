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


class HandRingAllGather:
    """Ring all_gather by hand (in place, NCCL layout: block r is rank r's input)."""

    def __init__(self, comm: MPI.Comm, buf: np.ndarray) -> None:
        self.comm, self.buf = comm, buf
        self.c = buf.size // comm.size

    def run(self) -> None:
        comm, buf, c = self.comm, self.buf, self.c
        p, r = comm.size, comm.rank
        right, left = (r + 1) % p, (r - 1) % p
        for s in range(p - 1):
            a, b = (r - s) % p * c, (r - s - 1) % p * c
            comm.Sendrecv(buf[a:a + c], right, recvbuf=buf[b:b + c], source=left)

    def close(self) -> None:
        pass


class HandRingReduceScatter:
    """Ring reduce_scatter by hand (in place, NCCL layout: rank r ends with block r reduced)."""

    def __init__(self, comm: MPI.Comm, buf: np.ndarray, scratch: np.ndarray) -> None:
        self.comm, self.buf, self.scratch = comm, buf, scratch
        self.c = buf.size // comm.size

    def run(self) -> None:
        comm, buf, tmp, c = self.comm, self.buf, self.scratch, self.c
        p, r = comm.size, comm.rank
        right, left = (r + 1) % p, (r - 1) % p
        for s in range(p - 1):
            a, b = (r - s - 1) % p * c, (r - s - 2) % p * c
            comm.Sendrecv(buf[a:a + c], right, recvbuf=tmp[b:b + c], source=left)
            np.add(buf[b:b + c], tmp[b:b + c], out=buf[b:b + c])

    def close(self) -> None:
        pass
