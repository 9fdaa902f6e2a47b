"""Run under mpiexec (6 ranks) by tests/probe/test_probe.py: the probe with an injected LinkDelay for one
node, a waiter that records instead of sleeping and a clock that counts: each read advances it
1 µs, each wait by what was waited (on that rank). Every sample is then exact: 1 µs plus the
delays the lower rank waited. Each rank checks exactly how many delays it waited, in the
tournament and in the confirmation pass, and how long they add up to; rank 0 checks its records:
the tournament flags node 1 only, the pass re-measures it against the reference it must pick,
and confirms it, slower by exactly the delays. Exit 0 when all holds."""

from __future__ import annotations

import sys
from typing import Any

from mpi4py import MPI

from bench.probe.confirm import Confirm
from bench.probe.links import from_launch
from bench.probe.record import Settings
from bench.probe.runner import Probe
from bench.probe.summary import findings
from bench.probe.verdict import decide

SLOW_NODE, DELAY = 1, 0.5  # every message to or from node 1 waits 0.5 s (recorded, not slept)
TICK_NS = 1000
PAIR, REFERENCE = (0, 1), (2, 3)  # node 1's lowest link; the lowest pair touching neither


class SlowNode:
    def __init__(self, node_of: tuple[int, ...]) -> None:
        self.node_of = node_of
        self.calls: list[tuple[int, int, int, int]] = []

    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        self.calls.append((src, dst, nbytes, flows))
        return DELAY if SLOW_NODE in (self.node_of[src], self.node_of[dst]) else 0.0

    def describe(self) -> dict[str, object]:
        return {"emulated": True, "emulation": {"slow_node": SLOW_NODE, "delay_s": DELAY}}


class CountingClock:
    def __init__(self) -> None:
        self.ns, self.waited = 0, []  # type: ignore[var-annotated]

    def __call__(self) -> int:
        self.ns += TICK_NS
        return self.ns

    def wait(self, s: float) -> None:
        self.waited.append(s)
        self.ns += round(s * 1e9)


def sends(me: int, peer: int, turns: int, w: int) -> int:
    """Messages ``me`` sends to ``peer`` per size: 1 ping + w one way + w both ways per turn on
    the lower rank, 1 pong + w both ways on the higher."""
    return turns * (1 + 2 * w if me < peer else 1 + w)


def check_records(records: list[dict[str, Any]], p: int, settings: Settings, w: int) -> list[str]:
    errors = []
    tour = [r for r in records if r["phase"] == "tournament"]
    conf = [r for r in records if r["phase"] == "confirm"]
    if len(tour) != p * (p - 1) // 2 * 2 or not all(r["emulation"]["slow_node"] == 1 for r in tour):
        errors.append(f"{len(tour)} tournament records, or without the emulation")
    got = sorted((r["role"], r["src"], r["dst"], r["nbytes"], r["blocks"], len(r["latency_samples_us"]))
                 for r in conf)
    want = sorted([("suspect", *PAIR, n, 3, 9) for n in settings.sizes]
                  + [("reference", *REFERENCE, n, 4, 12) for n in settings.sizes])
    if got != want:
        errors.append(f"confirmation records {got}, expected {want}")
    verdicts = decide(records, 0.25)
    d_us = DELAY * 1e6  # the lower rank's clock: 1 tick plus the waits, the reference 1 tick
    want_excess = [d_us / 0.5 / 2] * 2 + [w * d_us / 1.0] * 4  # latency, uni, bi at 8 B, 1 KiB
    if (len(verdicts) != 1 or not verdicts[0].confirmed
            or [round(t.excess, 6) for t in verdicts[0].retests] != want_excess
            or any(t.block_excess != (t.excess,) * 3 for t in verdicts[0].retests)):
        errors.append(f"verdicts {verdicts}, expected node 1 confirmed, excess {want_excess}")
    named = [(f.name, f.status) for f in findings(records, 0.25) if f.named]
    if named != [("node 1 (host h, rank 1)", "confirmed")]:
        errors.append(f"named {named}")
    return errors


def main() -> int:
    comm = MPI.COMM_WORLD
    layout = from_launch(["h"] * comm.size, 1)
    settings = Settings((8, 1024), repeats=3, window=2, warmup=1)
    confirm = Confirm(threshold=0.25, max_suspects=8, blocks=3, repeats=3)
    delay, clock, records = SlowNode(layout.node_of), CountingClock(), []
    Probe(comm, layout, settings, records.append, delay, clock.wait, clock=clock).run(confirm)
    me, p, w = comm.rank, comm.size, settings.window
    turns, cturns = settings.warmup + settings.repeats, settings.warmup + confirm.repeats
    want = sum(sends(me, peer, turns, w) for peer in range(p) if peer != me) * 2
    slow = sum(sends(me, peer, turns, w) for peer in range(p) if peer != me
               and SLOW_NODE in (layout.node_of[me], layout.node_of[peer])) * 2
    for pair, blocks in ((PAIR, confirm.blocks), (REFERENCE, confirm.blocks + 1)):
        if me in pair:
            peer = pair[1] if me == pair[0] else pair[0]
            n = blocks * sends(me, peer, cturns, w) * 2
            want += n
            slow += n if SLOW_NODE in (layout.node_of[me], layout.node_of[peer]) else 0
    errors = []
    if len(delay.calls) != want or len(clock.waited) != want:
        errors.append(f"{len(delay.calls)} delays asked, {len(clock.waited)} waited, expected {want}")
    if abs(sum(clock.waited) - slow * DELAY) > 1e-9:
        errors.append(f"waited {sum(clock.waited)} s, expected {slow * DELAY}")
    if any(src != me or f != 1 for src, _, _, f in delay.calls):
        errors.append("a delay asked for another sender or with flows != 1")
    if me == 0:
        errors += check_records(records, p, settings, w)
    for e in errors:
        print(f"rank {me}: {e}", file=sys.stderr)
    return 1 if comm.allreduce(len(errors)) else 0


if __name__ == "__main__":
    sys.exit(main())
