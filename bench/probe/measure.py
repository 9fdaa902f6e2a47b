"""One pair of ranks, one size: the probe's clock (``time.perf_counter_ns``), and only here.

Three measurements, taken in turn ``repeats`` times (after ``warmup`` untimed turns) so that
each sees the same stretch of the machine's time:

- latency: one ping-pong of ``nbytes`` (``MPI_Send`` then ``MPI_Recv`` on the lower rank, the
  reverse on the higher); the sample is half the round trip, as osu_latency reports it;
- unidirectional: the lower rank sends a window of ``window`` messages (persistent requests,
  ``MPI_Startall``-style one by one, then ``MPI_Waitall``), the higher rank receives them and
  answers with a 4-byte ack, as osu_bw does; the sample is the window's time, ack included;
- bidirectional: both ranks post ``window`` receives and send ``window`` messages at once, as
  osu_bibw does, each window from a synchronised start: the higher rank says it is ready (a
  4-byte message), the lower rank reads its clock and answers go (4 bytes), and only then does
  either rank post its window (receives, then sends). The sample runs from that clock read to
  the end of both windows on the lower rank: the windows both ways plus the go message's
  latency (as uni's includes its ack). Without the handshake a rank that got ahead (the other
  descheduled, or still in the previous measurement) sends its window before the clock starts,
  and small windows came out faster than one message's latency.

The window's messages share one send and one receive buffer, as in OSU (contents are not
checked). With an emulated link (:class:`bench.costmodel.delay.LinkDelay`) the sender waits
``delay_s(src, dst, nbytes)`` before every message it sends, inside the timed region: the
emulated link's extra time is part of what is measured. Each pair is priced as if alone on its
links (``flows=1``): the probe does not know how many NICs a node has, so it cannot say how
many of a round's pairs share the slowest one. Only the lower rank reads the clock;
nothing is pickled while timing. Tests may hand in another clock (nanoseconds, as
``perf_counter_ns``): one that counts its reads and the waits makes every sample exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from mpi4py import MPI

from bench.costmodel.delay import LinkDelay
from bench.probe.settings import Clock, Samples, Settings, Wait
from kernels.transports.mpi import buffer_spec

TAG, ACK_TAG, BW_TAG, SYNC_TAG = 11, 12, 13, 14  # ping-pong, acknowledgement, windows, bi start
ACK_BYTES = 4  # osu_bw's acknowledgement (and the bi handshake's ready and go)


class PairProbe:
    """A rank's side of every pair it is in: buffers of the largest size, allocated once."""

    def __init__(self, comm: MPI.Comm, settings: Settings, delay: LinkDelay | None = None,
                 wait: Wait = time.sleep, clock: Clock = time.perf_counter_ns) -> None:
        self.comm, self.settings, self.delay, self.wait = comm, settings, delay, wait
        self.clock = clock
        n = max(settings.sizes)
        self._send = np.zeros(n, dtype=np.uint8)
        self._recv = np.zeros(n, dtype=np.uint8)
        self._ack = np.zeros(ACK_BYTES, dtype=np.uint8)

    def pair(self, peer: int, sizes: Sequence[int] | None = None) -> list[Samples] | None:
        """Every size (or ``sizes``, each at most the largest) with ``peer`` (both ranks call
        it); samples on the lower rank, else None."""
        out = [self._size(peer, n) for n in (self.settings.sizes if sizes is None else sizes)]
        return None if self.comm.rank > peer else out  # type: ignore[return-value]

    def _pace(self, peer: int, nbytes: int) -> Callable[[], object] | None:
        delay, me, wait = self.delay, self.comm.rank, self.wait
        if delay is None:
            return None
        return lambda: wait(delay.delay_s(me, peer, nbytes, 1))

    def _size(self, peer: int, nbytes: int) -> Samples | None:
        comm, s = self.comm, self.settings
        first = comm.rank < peer
        send = buffer_spec(self._send[:nbytes], MPI.BYTE)
        recv = buffer_spec(self._recv[:nbytes], MPI.BYTE)
        ack = buffer_spec(self._ack, MPI.BYTE)
        sends = [comm.Send_init(send, peer, BW_TAG) for _ in range(s.window)]
        recvs = [comm.Recv_init(recv, peer, BW_TAG) for _ in range(s.window)]
        pace = self._pace(peer, nbytes)
        lat: list[float] = []
        uni: list[float] = []
        bi: list[float] = []
        try:
            for i in range(s.warmup + s.repeats):
                keep = i >= s.warmup
                t = _pingpong(comm, peer, first, send, recv, pace, self.clock)
                if keep and first:
                    lat.append(t / 2)
                t = _one_way(comm, peer, first, sends, recvs, ack, pace, self.clock)
                if keep and first:
                    uni.append(t)
                t = _both_ways(comm, peer, first, sends, recvs, ack, pace, self.clock)
                if keep and first:
                    bi.append(t)
        finally:
            for r in (*sends, *recvs):
                r.Free()
        return Samples(nbytes, tuple(lat), tuple(uni), tuple(bi)) if first else None


def _us(t0: int, clock: Clock) -> float:
    return (clock() - t0) / 1e3


def _pingpong(comm: MPI.Comm, peer: int, first: bool, send: object, recv: object,
              pace: Callable[[], object] | None, clock: Clock) -> float:
    if first:
        t0 = clock()
        if pace:
            pace()
        comm.Send(send, peer, TAG)
        comm.Recv(recv, peer, TAG)
        return _us(t0, clock)
    comm.Recv(recv, peer, TAG)
    if pace:
        pace()
    comm.Send(send, peer, TAG)
    return 0.0


def _one_way(comm: MPI.Comm, peer: int, first: bool, sends: list[MPI.Prequest],
             recvs: list[MPI.Prequest], ack: object, pace: Callable[[], object] | None,
             clock: Clock) -> float:
    if first:
        t0 = clock()
        for r in sends:
            if pace:
                pace()
            r.Start()
        MPI.Request.Waitall(sends)
        comm.Recv(ack, peer, ACK_TAG)
        return _us(t0, clock)
    MPI.Prequest.Startall(recvs)
    MPI.Request.Waitall(recvs)
    comm.Send(ack, peer, ACK_TAG)
    return 0.0


def _both_ways(comm: MPI.Comm, peer: int, first: bool, sends: list[MPI.Prequest],
               recvs: list[MPI.Prequest], sync: object, pace: Callable[[], object] | None,
               clock: Clock) -> float:
    """One bidirectional window from a synchronised start: the higher rank sends ready and
    waits for go; the lower rank waits for ready, reads its clock, sends go. Neither rank posts
    its window before the clock has started, and a rank that is late (descheduled) is waited
    for before it, not inside the sample."""
    t0 = 0
    if first:
        comm.Recv(sync, peer, SYNC_TAG)
        t0 = clock()
        comm.Send(sync, peer, SYNC_TAG)
    else:
        comm.Send(sync, peer, SYNC_TAG)
        comm.Recv(sync, peer, SYNC_TAG)
    MPI.Prequest.Startall(recvs)
    for r in sends:
        if pace:
            pace()
        r.Start()
    MPI.Request.Waitall(recvs)
    MPI.Request.Waitall(sends)
    return _us(t0, clock) if first else 0.0
