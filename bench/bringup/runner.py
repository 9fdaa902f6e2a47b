"""A bring-up inside one MPI job: every stage's rounds, each round's groups of hosts at once.

Each group of a round is a communicator of its hosts' ranks; it runs the scenario's cases with the
collective harness (the one clock, the exact check) while the other groups of the round run
theirs. Records reach rank 0 of the job after each round, tagged with the stage and the group's
hosts, and are on disk before the next round starts. The watchdog and the in-flight marker name a
round that hangs.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from bench.bringup import stages
from bench.bringup.scenario import BringupScenario
from bench.collective import harness
from bench.collective.case import groups
from kernels.topology import Topology
from kernels.transports import TRANSPORTS

Emit = Callable[[dict[str, Any]], None]


def host_names(comm: MPI.Comm) -> tuple[list[str], list[list[int]]]:
    """Every rank's host, and each host's ranks (hosts numbered by first rank)."""
    names = comm.allgather(socket.gethostname())
    return names, stages.host_ranks(names)


def _measure(sub: MPI.Comm, sc: BringupScenario, extra: dict[str, Any],
             done: frozenset[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Every case of the scenario on ``sub`` that has no record yet (``done``: a resumed run's
    keys, :func:`bench.bringup.launch.key`); records on its rank 0."""
    topo = Topology.from_hosts(sub.allgather(socket.gethostname()))
    rpn = topo.ranks_per_node  # ValueError when hosts hold different numbers of ranks
    cases = sc.cases(sub.size)
    transport = TRANSPORTS.get("mpi").create(sub)
    out: list[dict[str, Any]] = []
    try:
        for g in groups(cases, sub.size, rpn):
            where = (extra["stage"], tuple(extra["group_hosts"]), g.collective)
            todo = tuple(a for a in g.algorithms if (*where, a, g.nbytes) not in done)
            if todo:
                g = dataclasses.replace(g, algorithms=todo)
                out += harness.measure(harness.Env(sub, transport, topo, extra), g,
                                       cases.timing, True)
    finally:
        transport.close()
    return out


def run_stages(comm: MPI.Comm, sc: BringupScenario, emit: Emit | None, extra: dict[str, Any],
               say: Callable[[str], None] | None, arm: Callable[[str], None],
               disarm: Callable[[], None], done: frozenset[tuple[Any, ...]] = frozenset()) -> int:
    """Every stage of ``sc`` (cases in ``done`` skipped); ``emit`` (rank 0) gets each record;
    returns how many."""
    names, ranks = host_names(comm)
    hosts = [names[r[0]] for r in ranks]
    mine = next(i for i, r in enumerate(ranks) if comm.rank in r)
    written = 0
    for stage in sc.stages:
        rounds = stages.plan(stage, len(hosts))
        for i, rnd in enumerate(rounds):
            label = f"{stage} stage, round {i + 1}/{len(rounds)}: " + ", ".join(
                "+".join(hosts[h] for h in g.hosts) for g in rnd)
            if say and comm.rank == 0:
                say(label)
            color = next((j for j, g in enumerate(rnd) if mine in g.hosts), MPI.UNDEFINED)
            sub = comm.Split(color, comm.rank)
            recs: list[dict[str, Any]] = []
            arm(label)
            if sub != MPI.COMM_NULL:
                group = rnd[color]
                tag = {"stage": stage, "group_hosts": [hosts[h] for h in group.hosts], **extra}
                # collective records of a bring-up stage: their own kind, so the sweep's
                # sections and the gate (keyed by collective case) do not mix groups of hosts
                recs = [{**r, **tag, "kind": "bringup"} for r in _measure(sub, sc, tag, done)]
                sub.Free()
            gathered = comm.gather(recs, root=0)
            disarm()
            if emit is not None and gathered is not None:
                for rec in (r for part in gathered for r in part):
                    emit(rec)
                    written += 1
            comm.Barrier()
    return written


