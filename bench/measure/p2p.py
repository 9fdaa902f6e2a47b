"""Point-to-point cases as OSU measures them: ``pingpong`` (osu_latency: half the round trip),
``one_way`` (osu_bw: a window of messages, then a 4-byte ack) and ``both_ways`` (osu_bibw), each a
``run`` the harness times after the pair's barrier; the sample is the max of the pair's two ranks
(:func:`pair_max`). ``pace`` (an emulated link) is waited before every message a rank sends,
inside the timed region. docs/probe.md, "What is measured, and how"."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from mpi4py import MPI

from bench.measure.timer import CLOCK, Clock, Timer
from kernels.transports.mpi import buffer_spec

TAG, ACK_TAG, BW_TAG, SYNC_TAG = 11, 12, 13, 14  # ping-pong, acknowledgement, windows, barrier
ACK_BYTES = 4  # osu_bw's acknowledgement

Pace = Callable[[], object]


class PairCase:
    """This rank's side of one pair at one size, on buffers of at least ``nbytes``."""

    def __init__(self, comm: MPI.Comm, peer: int, send: np.ndarray, recv: np.ndarray,
                 nbytes: int, window: int, pace: Pace | None = None) -> None:
        self.comm, self.peer, self.first, self.pace = comm, peer, comm.rank < peer, pace
        self.send = buffer_spec(send[:nbytes], MPI.BYTE)
        self.recv = buffer_spec(recv[:nbytes], MPI.BYTE)
        self.ack = buffer_spec(np.zeros(ACK_BYTES, np.uint8), MPI.BYTE)
        self.empty = buffer_spec(np.zeros(0, np.uint8), MPI.BYTE)
        self.sends = [comm.Send_init(self.send, peer, BW_TAG) for _ in range(window)]
        self.recvs = [comm.Recv_init(self.recv, peer, BW_TAG) for _ in range(window)]

    @property
    def runs(self) -> list[Callable[[], None]]:
        return [self.pingpong, self.one_way, self.both_ways]

    def barrier(self) -> None:
        """The pair's barrier: an empty message each way."""
        self.comm.Sendrecv(self.empty, self.peer, SYNC_TAG, self.empty, self.peer, SYNC_TAG)

    def _start_sends(self) -> None:
        for r in self.sends:
            if self.pace:
                self.pace()
            r.Start()

    def pingpong(self) -> None:
        comm, peer = self.comm, self.peer
        if not self.first:
            comm.Recv(self.recv, peer, TAG)
        if self.pace:
            self.pace()
        comm.Send(self.send, peer, TAG)
        if self.first:
            comm.Recv(self.recv, peer, TAG)

    def one_way(self) -> None:
        if self.first:
            self._start_sends()
            MPI.Request.Waitall(self.sends)
            self.comm.Recv(self.ack, self.peer, ACK_TAG)
            return
        MPI.Prequest.Startall(self.recvs)
        MPI.Request.Waitall(self.recvs)
        self.comm.Send(self.ack, self.peer, ACK_TAG)

    def both_ways(self) -> None:
        MPI.Prequest.Startall(self.recvs)
        self._start_sends()
        MPI.Request.Waitall(self.recvs)
        MPI.Request.Waitall(self.sends)

    def time(self, repeats: int, warmup: int, clock: Clock = CLOCK) -> list[list[float]]:
        """This rank's samples (µs) of each run: ``warmup`` untimed-for-the-record turns, then
        ``repeats`` turns of the three, order reversed every other turn."""
        timer = Timer(before=self.barrier, clock=clock)
        try:
            timer.warm(self.runs, warmup)
            return timer.turns(self.runs, repeats, repeats)
        finally:
            for r in (*self.sends, *self.recvs):
                r.Free()


def pair_max(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> list[list[float]]:
    """Each run's per-iteration samples, the max of the pair's two ranks."""
    return [np.maximum(np.asarray(x), np.asarray(y)).tolist() for x, y in zip(a, b)]
