"""The confirmation pass inside the MPI job: each suspect's pair and its reference pair, one
pair at a time, every other rank asleep at a barrier.

Rank 0 plans the checks from the tournament's records (:func:`bench.probe.confirm.plan`) and
sends the plan to every rank. In each check the reference and the suspect take turns,
R S R ... S R (``blocks`` suspect blocks; each block ``repeats`` samples per measurement at the
check's sizes, after ``warmup`` untimed turns). Between blocks every rank meets at a barrier it
waits for asleep (``Ibarrier`` tested every 2 ms): an MPI barrier spins, and on an
oversubscribed host the spinning of the idle ranks would be the very stalls the pass is there
to rule out. On an oversubscribed host the measured pair is pinned to two different cores for
each block (:mod:`bench.probe.pin`). After each block the pair's lower rank sends its samples
to rank 0, which writes one record per pair, role and size when the check ends
(:func:`bench.probe.record.block_record`)
and says the verdict (:mod:`bench.probe.verdict`). Emulated links are waited as in the
tournament (the same ``delay`` and ``wait``): a slow emulated node stays slow here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mpi4py import MPI

from bench.costmodel.delay import LinkDelay
from bench.probe.confirm import Check, Confirm, Plan
from bench.probe.links import Layout
from bench.probe.measure import PairProbe
from bench.probe.outliers import z_for
from bench.probe.pin import pinned
from bench.probe.record import block_record
from bench.probe.settings import Clock, Samples, Settings, Wait
from bench.probe.verdict import Retest, retest
from bench.units import format_size

IDLE_POLL_S = 2e-3  # how often a rank asleep at the barrier looks whether it is over
SAMPLES_TAG = 21

Sink = Callable[[dict[str, Any]], object]
Say = Callable[[str], object]


def idle_barrier(comm: MPI.Comm, poll_s: float = IDLE_POLL_S) -> None:
    """A barrier waited for asleep, leaving the cores to the ranks still measuring."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll_s)


def header(plan: Plan, confirm: Confirm) -> list[str]:
    """The progress lines that open the pass: what it re-measures and what it costs."""
    n = len(plan.checks)
    if not n and not plan.over_limit and not plan.no_reference:
        return ["probe: confirmation: nothing flagged, nothing to re-measure"]
    out = [f"probe: confirmation: {n} suspect{'s' if n != 1 else ''} re-measured one pair at a "
           f"time (at most {confirm.max_suspects}): {confirm.blocks} blocks of {confirm.repeats} "
           f"samples each, a reference pair of its class measured before, between and after "
           f"({2 * confirm.blocks + 1} blocks a suspect)"]
    if plan.over_limit:
        out.append(f"probe: confirmation: {len(plan.over_limit)} more suspects over the limit of "
                   f"{confirm.max_suspects} stay flagged, not re-measured")
    if plan.no_reference:
        out.append(f"probe: confirmation: no reference pair for {', '.join(plan.no_reference)}: "
                   "flagged, not re-measured")
    return out


def _line(i: int, n: int, check: Check, tests: list[Retest], seconds: float) -> str:
    def pair(p: tuple[int, int]) -> str:
        return f"ranks {p[0]}-{p[1]}"

    verdict = "confirmed" if any(t.slow for t in tests) else "cleared"
    what = ", ".join(f"{t.measurement} {format_size(t.nbytes)} {t.excess:+.0%}" for t in tests)
    return (f"probe: confirm {i + 1}/{n}: {check.name}: {pair(check.pair)} against "
            f"{pair(check.reference)} ({check.link_class}): {verdict} ({what}; {seconds:.1f} s)")


def confirm_pass(comm: MPI.Comm, work: MPI.Comm, layout: Layout, settings: Settings,
                 confirm: Confirm, plan: Plan | None, delay: LinkDelay | None, wait: Wait,
                 clock: Clock, sink: Any = None, extra: Mapping[str, Any] | None = None,
                 say: Say | None = None, before: Callable[[str], object] | None = None,
                 pin: bool = False) -> int:
    """Run rank 0's ``plan`` on every rank; returns the records written (on rank 0). ``pin``:
    each measured pair on two different cores (an oversubscribed host, :mod:`bench.probe.pin`)."""
    plan = comm.bcast(plan, root=0)
    assert plan is not None
    if say and comm.rank == 0:
        for line in header(plan, confirm):
            say(line)
    z = z_for(sum(len(c.tests) for c in plan.checks))
    written = 0
    for check in plan.checks:
        if before:
            before(f"probe confirmation {check.index + 1}/{len(plan.checks)}")
        t0 = time.monotonic()
        s = Settings(check.sizes, confirm.repeats, settings.window, settings.warmup)
        got = _blocks(comm, PairProbe(work, s, delay, wait, clock), check, confirm.blocks, pin)
        if comm.rank != 0:
            continue
        recs: dict[tuple[str, int], dict[str, Any]] = {}
        for role, (a, b) in (("suspect", check.pair), ("reference", check.reference)):
            for k, n in enumerate(check.sizes):
                rec = block_record(layout, a, b, [blk[k] for blk in got[role]], s,
                                   {**(extra or {}), **check.fields(role, len(plan.checks)),
                                    "pinned": pin})
                recs[(role, n)] = rec
                if sink:
                    sink(rec)
                written += 1
        if say:
            tests = [retest(recs[("suspect", n)], recs[("reference", n)], m, confirm.threshold, z)
                     for m, n in check.tests]
            say(_line(check.index, len(plan.checks), check, tests, time.monotonic() - t0))
    return written


def _blocks(comm: MPI.Comm, pp: PairProbe, check: Check, blocks: int,
            pin: bool) -> dict[str, list[list[Samples]]]:
    """R S R ... S R: on rank 0, each role's samples per block (per size); empty elsewhere."""
    order = [("reference", check.reference)]
    for _ in range(blocks):
        order += [("suspect", check.pair), ("reference", check.reference)]
    got: dict[str, list[list[Samples]]] = {"suspect": [], "reference": []}
    for role, (a, b) in order:
        mine = None
        if comm.rank in (a, b):
            with pinned(0 if comm.rank == a else 1, pin):
                mine = pp.pair(b if comm.rank == a else a)
        idle_barrier(comm)
        if a != 0 and comm.rank == a:
            comm.send(mine, dest=0, tag=SAMPLES_TAG)
        elif a != 0 and comm.rank == 0:
            mine = comm.recv(source=a, tag=SAMPLES_TAG)
        if comm.rank == 0:
            got[role].append(mine)  # type: ignore[arg-type]
    return got
