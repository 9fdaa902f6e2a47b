"""Run under mpiexec (2 ranks) by tests/test_probe.py: the order of one pair's events, on both
ranks, for every turn of the three measurements. The communicator is wrapped to log each
blocking send and receive (by tag), the pacer (an emulated link of 0 s) logs each window
message before it is sent, and the clock logs each read (on the lower rank, the only clock).

What it proves for the bidirectional measurement: the higher rank posts its window only after
it has the lower rank's go, which the lower rank sends right after reading its clock, and the
lower rank reads its clock only after the higher rank said it is ready: no message of either
window can be on its way before the clock starts. Exit 0 when both ranks' logs are exactly as
expected."""

from __future__ import annotations

import sys
from typing import Any

from mpi4py import MPI

from bench.probe.measure import ACK_TAG, SYNC_TAG, TAG, PairProbe
from bench.probe.settings import Settings

TAGS = {TAG: "pingpong", ACK_TAG: "ack", SYNC_TAG: "sync"}
Event = tuple[str, ...]


class LoggedComm:
    """The communicator, logging blocking sends and receives; requests are the real ones."""

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

    def Send_init(self, *args: Any) -> MPI.Prequest:
        return self.comm.Send_init(*args)

    def Recv_init(self, *args: Any) -> MPI.Prequest:
        return self.comm.Recv_init(*args)


class ZeroLink:
    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        return 0.0

    def describe(self) -> dict[str, object]:
        return {"emulated": True}


def expected(lower: bool, turns: int, w: int) -> list[Event]:
    window = [("message",)] * w
    if lower:
        turn = [("clock",), ("message",), ("send", "pingpong"), ("recv", "pingpong"), ("clock",),
                ("clock",), *window, ("recv", "ack"), ("clock",),
                ("recv", "sync"), ("clock",), ("send", "sync"), *window, ("clock",)]
    else:
        turn = [("recv", "pingpong"), ("message",), ("send", "pingpong"),
                ("send", "ack"),
                ("send", "sync"), ("recv", "sync"), *window]
    return turn * turns


def main() -> int:
    comm = MPI.COMM_WORLD
    log: list[Event] = []
    ticks = iter(range(1000, 10**9, 1000))

    def clock() -> int:
        log.append(("clock",))
        return next(ticks)

    settings = Settings((8,), repeats=3, window=4, warmup=1)
    pp = PairProbe(LoggedComm(comm, log), settings, ZeroLink(),  # type: ignore[arg-type]
                   lambda s: log.append(("message",)), clock)
    got = pp.pair(1 - comm.rank)
    want = expected(comm.rank == 0, settings.warmup + settings.repeats, settings.window)
    errors = []
    if log != want:
        first = next((i for i, (a, b) in enumerate(zip(log, want)) if a != b), min(len(log), len(want)))
        errors.append(f"events differ from event {first}: got {log[first:first + 8]}, "
                      f"expected {want[first:first + 8]} ({len(log)} events, expected {len(want)})")
    if comm.rank == 0 and (got is None or got[0].bi_us != (1.0,) * settings.repeats):
        errors.append(f"bi samples {got[0].bi_us if got else None}: expected one tick each")
    for e in errors:
        print(f"rank {comm.rank}: {e}", file=sys.stderr)
    return 1 if comm.allreduce(len(errors)) else 0


if __name__ == "__main__":
    sys.exit(main())
