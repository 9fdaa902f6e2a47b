"""The probe inside an MPI job: the tournament's rounds, then the confirmation pass (R S R ... S R,
every other rank asleep at a barrier: spinning idle ranks would be the very stalls it rules out).
Each pair at each size is a point-to-point case the harness times. docs/probe.md."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mpi4py import MPI

from bench.costmodel.delay import LinkDelay
from bench.measure import harness
from bench.measure.p2p import PairCase, pair_max
from bench.measure.pairs import peer_in, rounds
from bench.measure.timer import CLOCK, Clock
from bench.probe.confirm import Check, Confirm, Plan, plan
from bench.probe.links import Layout, flows
from bench.probe.outliers import z_for
from bench.probe.record import Samples, Settings, block_record, pair_record
from bench.probe.verdict import Retest, retest, retests_text

Sink = Callable[[dict[str, Any]], object]
Say = Callable[[str], object]
PerSize = dict[int, list[list[float]]]  # nbytes -> this rank's samples of each measurement


@dataclass
class Probe:
    """A job's probe: its ranks, their layout and what they measure; ``sink`` and ``say`` on
    rank 0 only; ``before(label)`` on every rank before each round and check (a watchdog)."""

    comm: MPI.Comm
    layout: Layout
    settings: Settings
    sink: Sink | None = None
    delay: LinkDelay | None = None
    wait: Callable[[float], object] = time.sleep
    extra: Mapping[str, Any] = field(default_factory=dict)
    say: Say | None = None
    before: Callable[[str], object] | None = None
    clock: Clock = CLOCK
    pin: bool = False  # the confirmation pins each measured pair (an oversubscribed host)
    written: int = field(default=0, init=False)  # records, on rank 0
    buffers: tuple[np.ndarray, np.ndarray] = field(init=False)  # send, receive: the largest size

    def __post_init__(self) -> None:
        if self.comm.size != self.layout.world:
            raise ValueError(f"the layout has {self.layout.world} ranks, the communicator "
                             f"{self.comm.size}")
        n = max(self.settings.sizes)
        self.buffers = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        self.extra = {**self.extra, **(self.delay.describe() if self.delay is not None
                                       else {"emulated": False})}

    def _pair(self, work: MPI.Comm, peer: int, sizes: Sequence[int], repeats: int) -> PerSize:
        out = {}
        for n in sizes:
            case = PairCase(work, peer, *self.buffers, n, self.settings.window,
                            self._pace(work.rank, peer, n))
            out[n] = case.time(repeats, self.settings.warmup, self.clock)
        return out

    def _pace(self, me: int, peer: int, nbytes: int) -> Callable[[], object] | None:
        delay, wait = self.delay, self.wait
        if delay is None:
            return None
        return lambda: wait(delay.delay_s(me, peer, nbytes, 1))

    def _emit(self, rec: dict[str, Any]) -> dict[str, Any]:
        if self.sink:
            self.sink(rec)
        self.written += 1
        return rec

    def run(self, confirm: Confirm | None = None) -> int:
        """Every pair, then the suspects again (unless ``confirm`` is None or allows none);
        the records written (on rank 0; 0 elsewhere)."""
        comm, s = self.comm, self.settings
        schedule, work, t0 = rounds(comm.size), comm.Dup(), time.monotonic()
        kept: list[dict[str, Any]] = []  # rank 0, for the confirmation's plan: summaries only
        confirming = confirm is not None and confirm.max_suspects > 0
        try:
            for i, pairs in enumerate(schedule):
                if self.before:
                    self.before(f"probe round {i + 1}/{len(schedule)}")
                peer = peer_in(pairs, comm.rank)
                comm.Barrier()
                mine = self._pair(work, peer, s.sizes, s.repeats) if peer is not None else None
                got = comm.gather(mine, root=0)
                if got is None:
                    continue
                load = flows(self.layout, pairs)
                for a, b in pairs:
                    for n in s.sizes:
                        rec = self._emit(pair_record(
                            self.layout, a, b, load[(a, b)], i, _samples(n, got[a][n], got[b][n]),
                            s, {**self.extra, "phase": "tournament"}))
                        if confirming:
                            kept.append({k: v for k, v in rec.items()
                                         if not k.endswith("samples_us")})
                if self.say:
                    self.say(f"probe: round {i + 1}/{len(schedule)}: {len(pairs)} pairs "
                             f"({time.monotonic() - t0:.1f} s)")
            if confirming:
                assert confirm is not None
                self._confirm(work, confirm, plan(kept, confirm) if comm.rank == 0 else None)
        finally:
            work.Free()
        return self.written

    def _confirm(self, work: MPI.Comm, confirm: Confirm, the_plan: Plan | None) -> None:
        comm = self.comm
        p = comm.bcast(the_plan, root=0)
        if self.say and comm.rank == 0:
            for line in header(p, confirm):
                self.say(line)
        z = z_for(sum(len(c.tests) for c in p.checks))
        for check in p.checks:
            if self.before:
                self.before(f"probe confirmation {check.index + 1}/{len(p.checks)}")
            t0 = time.monotonic()
            got = self._blocks(work, check, confirm)
            if comm.rank != 0:
                continue
            s = Settings(check.sizes, confirm.repeats, self.settings.window, self.settings.warmup)
            recs = {(role, n): self._emit(block_record(
                        self.layout, *pair, [blk[k] for blk in got[role]], s,
                        {**self.extra, **check.fields(role, len(p.checks)), "pinned": self.pin}))
                    for role, pair in (("suspect", check.pair), ("reference", check.reference))
                    for k, n in enumerate(check.sizes)}
            if self.say:
                tests = [retest(recs[("suspect", n)], recs[("reference", n)], m,
                                confirm.threshold, z) for m, n in check.tests]
                self.say(_line(len(p.checks), check, tests, time.monotonic() - t0))

    def _blocks(self, work: MPI.Comm, check: Check,
                confirm: Confirm) -> dict[str, list[list[Samples]]]:
        """R S R ... S R: on rank 0, each role's samples per block (per size); empty elsewhere."""
        comm = self.comm
        got: dict[str, list[list[Samples]]] = {"suspect": [], "reference": []}
        order = [("reference", check.reference)]
        for _ in range(confirm.blocks):
            order += [("suspect", check.pair), ("reference", check.reference)]
        for role, (a, b) in order:
            mine = None
            if comm.rank in (a, b):
                with pinned(0 if comm.rank == a else 1, self.pin):
                    mine = self._pair(work, b if comm.rank == a else a, check.sizes,
                                      confirm.repeats)
            harness.idle_barrier(comm)
            both = comm.gather(mine, root=0)
            if both is not None:
                got[role].append([_samples(n, both[a][n], both[b][n]) for n in check.sizes])
        return got


def _samples(nbytes: int, a: list[list[float]], b: list[list[float]]) -> Samples:
    lat, uni, bi = pair_max(a, b)
    return Samples(nbytes, tuple(t / 2 for t in lat), tuple(uni), tuple(bi))


@contextlib.contextmanager
def pinned(slot: int, enabled: bool = True) -> Iterator[bool]:
    """This process on its ``slot``-th allowed core for the block (where affinity can be set
    and two cores are allowed); yields whether it is."""
    get, put = getattr(os, "sched_getaffinity", None), getattr(os, "sched_setaffinity", None)
    allowed = sorted(get(0)) if enabled and get and put else []
    if len(allowed) < 2:
        yield False
        return
    try:
        put(0, {allowed[slot % len(allowed)]})  # type: ignore[misc]
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            put(0, set(allowed))  # type: ignore[misc]


def header(p: Plan, confirm: Confirm) -> list[str]:
    """The progress lines that open the pass: what it re-measures and what it costs."""
    n = len(p.checks)
    if not n and not p.over_limit and not p.no_reference:
        return ["probe: confirmation: nothing flagged, nothing to re-measure"]
    out = [f"probe: confirmation: {n} suspect{'s' if n != 1 else ''} re-measured one pair at a "
           f"time (at most {confirm.max_suspects}): {confirm.blocks} blocks of {confirm.repeats} "
           f"samples each, a reference pair of its class measured before, between and after "
           f"({2 * confirm.blocks + 1} blocks a suspect)"]
    if p.over_limit:
        out.append(f"probe: confirmation: {len(p.over_limit)} more suspects over the limit of "
                   f"{confirm.max_suspects} stay flagged, not re-measured")
    if p.no_reference:
        out.append(f"probe: confirmation: no reference pair for {', '.join(p.no_reference)}: "
                   "flagged, not re-measured")
    return out


def _line(n: int, check: Check, tests: list[Retest], seconds: float) -> str:
    verdict = "confirmed" if any(t.slow for t in tests) else "cleared"
    (a, b), (c, d) = check.pair, check.reference
    return (f"probe: confirm {check.index + 1}/{n}: {check.name}: ranks {a}-{b} against ranks "
            f"{c}-{d} ({check.link_class}): {verdict} ({retests_text(tests)}; {seconds:.1f} s)")
