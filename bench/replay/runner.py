"""A replay inside its MPI job: each group's ranks split off and every distinct call of the step on
that group is measured by the harness while the other ranks wait; rank 0 writes one record per
call and algorithm (docs/replay.md, "What commbench run measures")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpi4py import MPI

from bench.launch.watchdog import Watchdog
from bench.measure import harness
from bench.measure.case import Group
from bench.measure.recording import oversubscribed_comm, recording, topology_for
from bench.replay.scenario import Case, ReplayScenario, group_label
from kernels.collective import resolve
from kernels.transports import TRANSPORTS, TransportUnavailable


def strategy(case: Case) -> str:
    """A record's ``strategy``: its group (and a rooted call's root), so the gate keys the
    calls of different groups apart."""
    rooted = resolve(case.collective).rooted
    return f"replay {case.label}" + (f" from {case.group[case.root]}" if rooted else "")


def annotate(rec: dict[str, Any], case: Case, calls: int, ops: list[str],
             source: str) -> dict[str, Any]:
    """The replay's fields of a record of ``case`` (measured or predicted): the trace's
    operations it stands for and how many such calls the step makes."""
    t = rec.get("time_us_median")
    rec.update(strategy=strategy(case), replay_group=list(case.group), replay_dtype=case.dtype,
               replay_root=case.group[case.root], replay_ops=ops, replay_calls=calls,
               replay_step_us=calls * t if t is not None else None, replay_of=source)
    return rec


def _by_group(sc: ReplayScenario) -> dict[tuple[int, ...], list[tuple[Case, int]]]:
    out: dict[tuple[int, ...], list[tuple[Case, int]]] = {}
    for case, n in sc.cases():
        out.setdefault(case.group, []).append((case, n))
    return out


def run_replay(comm: MPI.Comm, sc: ReplayScenario, run_dir: Path, run_id: str,
               say: Callable[[str], None] | None) -> int:
    """Every group's calls on every transport; returns the records written (rank 0)."""
    written = 0
    with recording(comm, run_dir) as (dog, writer):
        extra = {"run_id": run_id, "scenario": sc.name, "oversubscribed": oversubscribed_comm(comm)}
        for transport in sc.transports:
            for group, cases in _by_group(sc).items():
                member = comm.rank in group
                sub = comm.Split(0 if member else MPI.UNDEFINED, comm.rank)
                recs: list[tuple[dict[str, Any], Case, int]] = []
                skipped = None
                if sub != MPI.COMM_NULL:
                    try:
                        recs, skipped = _measure(sub, sc, transport, cases, extra, dog), None
                    except TransportUnavailable as e:
                        skipped = f"# skipped transport {transport} on group {group_label(group)}: {e}"
                    sub.Free()
                got = comm.gather((recs, skipped), root=0)
                if writer is None or got is None:
                    continue
                for part, why in got:
                    if why and say and part == []:
                        say(why)
                    for rec, case, n in part:
                        ops = sorted({c.op for c in sc.calls if c.case() == case})
                        writer.write(annotate(rec, case, n, ops, sc.source))
                        written += 1
                        if say:
                            say(f"# replay {transport} group {case.label}: {case.collective} "
                                f"{case.nbytes} B x {n} {rec['algorithm']}: "
                                f"{rec['time_us_median']:.1f} us each, {rec['status']}")
    return written


def _measure(sub: MPI.Comm, sc: ReplayScenario, transport: str, cases: list[tuple[Case, int]],
             extra: dict[str, Any], dog: Watchdog) -> list[tuple[dict[str, Any], Case, int]]:
    tr = TRANSPORTS.get(transport).create(sub)
    topo = topology_for(sub, "auto")
    out = []
    try:
        for case, n in cases:
            spec = resolve(case.collective)
            g = Group(case.collective, transport, sub.size, topo.ranks_per_node, case.nbytes,
                      case.count, case.on(TRANSPORTS.get(transport).dtypes),
                      "sum" if spec.reduces else "none", tuple(sc.algorithms), case.root)
            label = f"replay group {case.label}: {g.label()}"
            dog.arm_case(label, sc.case_timeout_s, world_size=sub.size)
            recs = harness.measure(harness.Env(sub, tr, topo, extra), g, sc.timing, sc.check)
            dog.disarm()
            out += [(r, case, n) for r in recs]
    finally:
        tr.close()
    return out
