"""The probe inside an MPI job: every round of the tournament, all its pairs at once.

Every rank takes part in every round (or sits it out, odd p); a barrier on the control
communicator starts each round, so pairs of different rounds never overlap. After a round, the
lower ranks' samples are gathered on rank 0 (pickled, outside any timed region), which turns
them into records at once (``sink``, e.g. the run's :class:`bench.store.records.ResultWriter`) and
reports progress. Measurements run on a duplicate of the communicator, so the control traffic
never meets a probe message. Then, with ``confirm``, the suspects the tournament's records name
are measured again one pair at a time (:mod:`bench.probe.confirm_job`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mpi4py import MPI

from bench.costmodel.delay import LinkDelay
from bench.probe.confirm import Confirm, plan
from bench.probe.confirm_job import confirm_pass
from bench.probe.links import Layout, flows
from bench.probe.measure import PairProbe
from bench.probe.record import pair_record
from bench.probe.schedule import peer_in, rounds
from bench.probe.settings import Clock, Settings, Wait

Sink = Callable[[dict[str, Any]], object]
Say = Callable[[str], object]


def probe(comm: MPI.Comm, layout: Layout, settings: Settings, sink: Sink | None = None,
          delay: LinkDelay | None = None, wait: Wait = time.sleep,
          extra: Mapping[str, Any] | None = None, say: Say | None = None,
          before: Callable[[str], object] | None = None, confirm: Confirm | None = None,
          clock: Clock = time.perf_counter_ns, pin: bool = False) -> int:
    """Probe every pair of ``comm``'s ranks, then confirm the suspects (``confirm``, unless None
    or ``max_suspects`` 0); returns the records written (on rank 0; 0 elsewhere). ``sink`` and
    ``say`` are used on rank 0 only; ``before(label)`` is called on every rank before each
    round and each check (a watchdog's arm, say); ``pin``: the confirmation pins each measured
    pair to two cores (an oversubscribed host)."""
    if comm.size != layout.world:
        raise ValueError(f"the layout has {layout.world} ranks, the communicator {comm.size}")
    schedule = rounds(comm.size)
    work = comm.Dup()
    pp = PairProbe(work, settings, delay, wait, clock)
    extra = {**(extra or {}), **(delay.describe() if delay is not None else {"emulated": False})}
    written, t_start = 0, time.monotonic()
    kept: list[dict[str, Any]] = []  # rank 0, for the confirmation's plan: summaries only
    confirming = confirm is not None and confirm.max_suspects > 0
    try:
        for i, pairs in enumerate(schedule):
            if before:
                before(f"probe round {i + 1}/{len(schedule)}")
            load = flows(layout, pairs)
            peer = peer_in(pairs, comm.rank)
            comm.Barrier()
            mine = None
            if peer is not None:
                key = (min(comm.rank, peer), max(comm.rank, peer))
                mine = pp.pair(peer)
                mine = (key, mine) if mine is not None else None
            got = comm.gather(mine, root=0)
            if comm.rank != 0:
                continue
            for item in got or ():
                if item is None:
                    continue
                (a, b), per_size = item
                for s in per_size:
                    rec = pair_record(layout, a, b, load[(a, b)], i, s, settings,
                                      {**extra, "phase": "tournament"})
                    if sink:
                        sink(rec)
                    if confirming:
                        kept.append({k: v for k, v in rec.items() if not k.endswith("samples_us")})
                    written += 1
            if say:
                say(f"probe: round {i + 1}/{len(schedule)}: {len(pairs)} pairs "
                    f"({time.monotonic() - t_start:.1f} s)")
        if confirming:
            assert confirm is not None
            written += confirm_pass(comm, work, layout, settings, confirm,
                                    plan(kept, confirm) if comm.rank == 0 else None, delay, wait,
                                    clock, sink, extra, say, before, pin)
    finally:
        work.Free()
    return written
