"""Runs a scenario's cases inside an MPI job (ours or the user's mpiexec/srun).

Rank 0 writes each record as soon as its group is measured, prints the table rows and shows
progress; every rank runs the same groups in the same order. In a job of N ranks, each scenario
world size w <= N runs on the first w ranks (the others wait), so one job can sweep cluster sizes.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from mpi4py import MPI

from bench import harness, table
from bench.case import Group, groups
from bench.progress import Progress
from bench.records import ResultWriter
from bench.scenario import CollectiveScenario
from bench.units import format_size
from bench.watchdog import Watchdog
from kernels.topology import Topology
from kernels.transports import TRANSPORTS, TransportUnavailable

INFLIGHT = "inflight.json"  # the case being measured, for the launcher to name on failure


@dataclass(frozen=True)
class RunContext:
    run_dir: Path
    run_id: str
    scenario: CollectiveScenario
    world_sizes: tuple[int, ...]  # the sizes this job measures
    progress: bool = True


def topology_for(comm: MPI.Comm, rpn: int | str) -> Topology:
    if rpn == "auto":
        hosts = comm.allgather(socket.gethostname())
        topo = Topology.from_hosts(hosts)
        topo.ranks_per_node  # noqa: B018 - raises when nodes hold different numbers of ranks
        return topo
    return Topology.blocks(comm.size, int(rpn))


def _oversubscribed(comm: MPI.Comm) -> bool:
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.size > (psutil.cpu_count(logical=True) or 1)
    finally:
        local.Free()


def run_job(ctx: RunContext, out: Any = sys.stdout) -> int:
    """Run every group this job owns; returns the number of records written (rank 0)."""
    world = MPI.COMM_WORLD
    dog = Watchdog(world)
    writer = ResultWriter(ctx.run_dir) if world.rank == 0 else None
    written = 0
    try:
        for w in ctx.world_sizes:
            sub = world.Split(0 if world.rank < w else MPI.UNDEFINED, world.rank)
            if sub != MPI.COMM_NULL:
                written += _run_world(ctx, sub, dog, writer, out)
                sub.Free()
            world.Barrier()
    finally:
        dog.close()
        if writer:
            writer.close()
            (ctx.run_dir / INFLIGHT).unlink(missing_ok=True)
    return written


def _run_world(ctx: RunContext, comm: MPI.Comm, dog: Watchdog, writer: ResultWriter | None,
               out: Any) -> int:
    sc = ctx.scenario
    over = _oversubscribed(comm)
    plan: list[tuple[Topology, Group]] = []
    notes: list[str] = []
    for rpn in sc.ranks_per_node:
        topo = topology_for(comm, rpn)
        plan += [(topo, g) for g in groups(sc, comm.size, topo.ranks_per_node, notes)]
    if comm.rank == 0:
        for line in notes:
            print(f"# note: {line}", file=out, flush=True)
    bar = Progress(len(plan), enabled=ctx.progress and comm.rank == 0)
    extra = {"run_id": ctx.run_id, "scenario": sc.name, "oversubscribed": over}
    written, shown = 0, None
    try:
        for transport_name in sc.transports:
            try:
                transport = TRANSPORTS.get(transport_name).create(comm)
            except TransportUnavailable as e:
                if comm.rank == 0:
                    print(f"# skipped transport {transport_name}: {e}", file=out, flush=True)
                continue
            for topo, g in plan:
                if g.transport != transport_name:
                    continue
                head = (g.collective, g.world_size, g.ranks_per_node, g.transport)
                if comm.rank == 0 and head != shown:
                    print(table.banner(*head, over), file=out, flush=True)
                    shown = head
                env = harness.Env(comm, transport, topo, extra)
                written += _run_group(ctx, env, g, dog, writer, bar, out)
            transport.close()
    finally:
        bar.close()
    return written


def _run_group(ctx: RunContext, env: harness.Env, g: Group, dog: Watchdog,
               writer: ResultWriter | None, bar: Progress, out: Any) -> int:
    label = g.label()
    if writer:
        _mark_inflight(ctx.run_dir, label, ctx.scenario.case_timeout_s)
    bar.start(f"p={g.world_size} {g.collective} {format_size(g.nbytes)} {g.dtype} {g.op} "
              f"{'/'.join(g.algorithms)}")
    dog.arm(label, ctx.scenario.case_timeout_s)
    records = harness.measure(env, g, ctx.scenario.timing, ctx.scenario.check)
    dog.disarm()
    bar.advance()
    for rec in records:
        assert writer is not None
        writer.write(rec)
        table.print_row(rec, out)
    return len(records)


def _mark_inflight(run_dir: Path, label: str, timeout_s: float) -> None:
    tmp = run_dir / (INFLIGHT + ".tmp")
    tmp.write_text(json.dumps({"case": label, "since": time.time(), "pid": os.getpid(),
                               "timeout_s": timeout_s}))
    os.replace(tmp, run_dir / INFLIGHT)


def fail(comm: MPI.Comm, message: str, code: int) -> None:
    """One line on stderr, then end the whole job (peers would otherwise wait forever)."""
    sys.stderr.write(f"commbench: rank {comm.rank}: {message}\n")
    sys.stderr.flush()
    comm.Abort(code)

