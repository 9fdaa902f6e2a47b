"""Run under mpiexec by tests/test_probe.py: the probe with an injected LinkDelay and a waiter
that records instead of sleeping. Each rank checks exactly how many delays it waited and how
long they add up to; rank 0 also checks the records it got. Exit 0 when all holds."""

from __future__ import annotations

import sys

from mpi4py import MPI

from bench.probe.job import probe
from bench.probe.links import from_launch
from bench.probe.measure import Settings

SLOW_NODE, DELAY = 1, 0.5  # every message to or from node 1 waits 0.5 s (recorded, not slept)


class SlowNode:
    def __init__(self, node_of: tuple[int, ...]) -> None:
        self.node_of = node_of
        self.calls: list[tuple[int, int, int, int]] = []

    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        self.calls.append((src, dst, nbytes, flows))
        return DELAY if SLOW_NODE in (self.node_of[src], self.node_of[dst]) else 0.0

    def describe(self) -> dict[str, object]:
        return {"emulated": True, "emulation": {"slow_node": SLOW_NODE, "delay_s": DELAY}}


def main() -> int:
    comm = MPI.COMM_WORLD
    layout = from_launch(["h"] * comm.size, 2)
    settings = Settings((8, 1024), repeats=3, window=2, warmup=1)
    delay, waited, records = SlowNode(layout.node_of), [], []
    probe(comm, layout, settings, records.append, delay, waited.append)
    me, p, turns, w = comm.rank, comm.size, settings.warmup + settings.repeats, settings.window
    # per peer and size: the lower rank sends 1 ping + w one way + w both ways per turn, the
    # higher rank 1 pong + w both ways
    want = sum(turns * (1 + 2 * w if me < peer else 1 + w) for peer in range(p) if peer != me) * 2
    slow = sum(turns * (1 + 2 * w if me < peer else 1 + w) for peer in range(p) if peer != me
               and SLOW_NODE in (layout.node_of[me], layout.node_of[peer])) * 2
    errors = []
    if len(delay.calls) != want or len(waited) != want:
        errors.append(f"{len(delay.calls)} delays asked, {len(waited)} waited, expected {want}")
    if abs(sum(waited) - slow * DELAY) > 1e-9:
        errors.append(f"waited {sum(waited)} s, expected {slow * DELAY}")
    if any(src != me or f != 1 for src, _, _, f in delay.calls):
        errors.append("a delay asked for another sender or with flows != 1")
    if me == 0 and (len(records) != p * (p - 1) // 2 * 2
                    or not all(r["emulated"] and r["emulation"]["slow_node"] == 1 for r in records)):
        errors.append(f"rank 0: {len(records)} records, or without the emulation")
    for e in errors:
        print(f"rank {me}: {e}", file=sys.stderr)
    return 1 if comm.allreduce(len(errors)) else 0


if __name__ == "__main__":
    sys.exit(main())
