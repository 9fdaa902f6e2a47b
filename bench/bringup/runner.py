"""A bring-up inside one MPI job: every stage's rounds, each round's groups of hosts at once, each
group a communicator running the scenario's cases through the collective harness over the
scenario's transport; records reach rank 0 after each round, tagged with the stage and the
group's hosts."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mpi4py import MPI

from bench.bringup import stages
from bench.bringup.scenario import BringupScenario
from bench.collective import harness
from bench.collective.case import groups
from bench.launch.rankstate import Where
from kernels.topology import Topology
from kernels.transports import TRANSPORTS

Emit = Callable[[dict[str, Any]], None]


def _measure(sub: MPI.Comm, sc: BringupScenario, extra: dict[str, Any],
             done: frozenset[tuple[Any, ...]], sizes: list[int] | None = None,
             at: Where | None = None) -> list[dict[str, Any]]:
    """Every case of the scenario (at ``sizes``) on ``sub`` without a record in ``done`` (keys of
    :func:`bench.bringup.launch.key`); records on its rank 0."""
    topo = Topology.from_hosts(sub.allgather(socket.gethostname()))
    rpn = topo.ranks_per_node  # ValueError when hosts hold different numbers of ranks
    cases = sc.cases(sub.size, sizes)
    transport = TRANSPORTS.get(sc.transport).create(sub)
    out: list[dict[str, Any]] = []
    try:
        for g in groups(cases, sub.size, rpn):
            where = (extra["stage"], tuple(extra["group_hosts"]), g.collective)
            todo = tuple(a for a in g.algorithms if (*where, a, g.nbytes) not in done)
            if todo:
                g = dataclasses.replace(g, algorithms=todo)
                out += harness.measure(harness.Env(sub, transport, topo, extra, at), g,
                                       cases.timing, True)
    finally:
        transport.close()
    return out


@dataclass(frozen=True)
class Job:
    """What one round of a stage measures: its groups at once, tagged ``tag`` (plus the stage
    and each group's hosts)."""

    stage: str
    label: str
    groups: stages.Round
    tag: dict[str, Any] = field(default_factory=dict)
    sizes: list[int] | None = None


class _Stages:
    def __init__(self, comm: MPI.Comm, sc: BringupScenario, emit: Emit | None,
                 extra: dict[str, Any], say: Callable[[str], None] | None,
                 arm: Callable[[str], None], disarm: Callable[[], None],
                 done: frozenset[tuple[Any, ...]], where: Where | None = None) -> None:
        self.comm, self.sc, self.emit, self.extra, self.where = comm, sc, emit, extra, where
        self.say, self.arm, self.disarm, self.done = say, arm, disarm, done
        names = comm.allgather(socket.gethostname())
        ranks = stages.host_ranks(names)
        self.hosts = [names[r[0]] for r in ranks]
        self.mine = next(i for i, r in enumerate(ranks) if comm.rank in r)

    def round(self, job: Job) -> list[dict[str, Any]]:
        """Measure one round; its records (rank 0; [] elsewhere), emitted as they arrive."""
        comm = self.comm
        if self.say and comm.rank == 0:
            self.say(job.label)
        color = next((j for j, g in enumerate(job.groups) if self.mine in g.hosts), MPI.UNDEFINED)
        sub = comm.Split(color, comm.rank)
        recs: list[dict[str, Any]] = []
        self.arm(job.label)
        if sub != MPI.COMM_NULL:
            tag = {"stage": job.stage,
                   "group_hosts": [self.hosts[h] for h in job.groups[color].hosts],
                   **job.tag, **self.extra}
            # collective records of a bring-up stage: their own kind, so the sweep's sections
            # and the gate (keyed by collective case) do not mix groups of hosts
            recs = [{**r, **tag, "kind": "bringup"}
                    for r in _measure(sub, self.sc, tag, self.done, job.sizes, self.where)]
            sub.Free()
        harness.idle_barrier(comm)
        gathered = comm.gather(recs, root=0)
        self.disarm()
        out = [r for part in gathered for r in part] if gathered is not None else []
        if self.emit is not None:
            for rec in out:
                self.emit(rec)
        comm.Barrier()
        return out

    def stage(self, stage: str) -> None:
        rounds = stages.plan(stage, len(self.hosts), self.sc.groups_at_once)
        got: list[dict[str, Any]] = []
        for i, rnd in enumerate(rounds):
            label = f"{stage} stage, round {i + 1}/{len(rounds)}: " + ", ".join(
                "+".join(self.hosts[h] for h in g.hosts) for g in rnd)
            got += self.round(Job(stage, label, rnd))
        if stage in CONFIRMED and self.sc.confirm_blocks:
            self.confirm(stage, got)

    def confirm(self, stage: str, got: list[dict[str, Any]]) -> None:
        """Each suspect of the stage re-measured alone, against a reference group alone, in
        alternating blocks (:func:`bench.bringup.verdict.suspects`)."""
        from bench.bringup.verdict import suspects

        plan = suspects(got, self.sc.slow_pct) if self.comm.rank == 0 else None
        plan = self.comm.bcast(plan, root=0)
        index = {h: i for i, h in enumerate(self.hosts)}
        top = [max(self.sc.sizes)]
        for target, suspect, reference in plan:
            for block in range(self.sc.confirm_blocks):
                for role, group in (("suspect", suspect), ("reference", reference)):
                    ids = tuple(index[h] for h in group)
                    label = (f"{stage} stage, re-measuring {target} alone ({block + 1}/"
                             f"{self.sc.confirm_blocks}): {role} {'+'.join(group)}")
                    self.round(Job(f"{stage}-confirm", label, (stages.Group(ids),),
                                   {"confirm_of": target, "role": role, "block": block}, top))


CONFIRMED = ("host", "pairs")  # the stages whose suspects are re-measured alone


def run_stages(comm: MPI.Comm, sc: BringupScenario, emit: Emit | None, extra: dict[str, Any],
               say: Callable[[str], None] | None, arm: Callable[[str], None],
               disarm: Callable[[], None], done: frozenset[tuple[Any, ...]] = frozenset(),
               where: Where | None = None) -> None:
    """Every stage of ``sc`` (cases in ``done`` skipped), each stage's suspects re-measured
    alone; ``emit`` (rank 0) gets each record; ``where``: kept current for the watchdog."""
    run = _Stages(comm, sc, emit, extra, say, arm, disarm, done, where)
    for stage in sc.stages:
        run.stage(stage)
