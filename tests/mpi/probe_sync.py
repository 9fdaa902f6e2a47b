"""Run under mpiexec (2 ranks) by tests/probe/test_probe.py: the order of one pair's events, on both
ranks, for every iteration of the three point-to-point cases as the harness times them. The
communicator is wrapped to log each blocking send, receive and the pair's barrier (by tag), the
pacer (an emulated link of 0 s) logs each message before it is sent, and the clock logs each read.

What it proves: every iteration starts with the pair's barrier, then this rank's clock, and no
rank sends a message of any measurement (a window included) before its own clock has started;
each rank's clock is read on both sides of the iteration, and the pair's sample is the max of
its two ranks' (rank 1's clock ticks twice as long, so every sample is its). Exit 0 when both
ranks' logs are exactly as expected."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from bench.measure.p2p import ACK_TAG, SYNC_TAG, TAG, PairCase, pair_max

TAGS = {TAG: "pingpong", ACK_TAG: "ack", SYNC_TAG: "barrier"}
Event = tuple[str, ...]
REPEATS, WARMUP, WINDOW = 3, 1, 4


class LoggedComm:
    """The communicator, logging blocking sends, receives and barriers; requests are real."""

    def __init__(self, comm: MPI.Comm, log: list[Event]) -> None:
        self.comm, self.log = comm, log

    @property
    def rank(self) -> int:
        return int(self.comm.rank)

    def Send(self, buf: Any, dest: int, tag: int) -> None:
        self.log.append(("send", TAGS[tag]))
        self.comm.Send(buf, dest, tag)

    def Recv(self, buf: Any, source: int, tag: int) -> None:
        self.comm.Recv(buf, source, tag)
        self.log.append(("recv", TAGS[tag]))

    def Sendrecv(self, *args: Any) -> None:
        self.log.append((TAGS[args[2]],))
        self.comm.Sendrecv(*args)

    def Send_init(self, *args: Any) -> MPI.Prequest:
        return self.comm.Send_init(*args)

    def Recv_init(self, *args: Any) -> MPI.Prequest:
        return self.comm.Recv_init(*args)


def expected(lower: bool) -> list[Event]:
    window = [("message",)] * WINDOW
    start, end = [("barrier",), ("clock",)], [("clock",)]
    if lower:
        runs = [[("message",), ("send", "pingpong"), ("recv", "pingpong")],
                [*window, ("recv", "ack")], window]
    else:
        runs = [[("recv", "pingpong"), ("message",), ("send", "pingpong")],
                [("send", "ack")], window]
    order = [0, 1, 2] * WARMUP
    for rep in range(REPEATS):
        order += [0, 1, 2] if rep % 2 == 0 else [2, 1, 0]
    return [e for i in order for e in (*start, *runs[i], *end)]


def main() -> int:
    comm = MPI.COMM_WORLD
    log: list[Event] = []
    tick = 1000 * (1 + comm.rank)
    ticks = iter(range(tick, 10**9, tick))

    def clock() -> int:
        log.append(("clock",))
        return next(ticks)

    buf = np.zeros(8, np.uint8), np.zeros(8, np.uint8)
    case = PairCase(LoggedComm(comm, log), 1 - comm.rank, *buf, 8, WINDOW,  # type: ignore[arg-type]
                    lambda: log.append(("message",)))
    mine = case.time(REPEATS, WARMUP, clock)
    both = comm.gather(mine, root=0)
    want = expected(comm.rank == 0)
    errors = []
    if log != want:
        first = next((i for i, (a, b) in enumerate(zip(log, want)) if a != b), min(len(log), len(want)))
        errors.append(f"events differ from event {first}: got {log[first:first + 8]}, "
                      f"expected {want[first:first + 8]} ({len(log)} events, expected {len(want)})")
    if both is not None and pair_max(*both) != [[2.0] * REPEATS] * 3:
        errors.append(f"pair samples {pair_max(*both)}: expected rank 1's tick each")
    for e in errors:
        print(f"rank {comm.rank}: {e}", file=sys.stderr)
    return 1 if comm.allreduce(len(errors)) else 0


if __name__ == "__main__":
    sys.exit(main())
