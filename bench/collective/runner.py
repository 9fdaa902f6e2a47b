"""Runs a scenario's cases inside an MPI job (ours or the user's mpiexec/srun): every rank runs the
same groups in the same order, each world size w on the first w ranks; rank 0 writes each record
as its group is measured. A resumed run skips the cases that have a record."""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpi4py import MPI

from bench.collective import mpi_t, nccl_log
from bench.collective.case import groups
from bench.collective.console import DEFAULT as DEFAULT_TABLE
from bench.collective.console import Console
from bench.collective.progress import Progress, of_run
from bench.collective.scenario import CollectiveScenario
from bench.collective.variants import JOB_ENV, Settings
from bench.launch.threadlevel import thread_fields
from bench.launch.watchdog import Watchdog
from bench.measure import canary, floors, harness, skips
from bench.measure.case import Group
from bench.measure.recording import oversubscribed_comm, recording, topology_for
from bench.store.records import ResultWriter
from bench.store.resume import CaseKey, collective_key
from bench.units import format_size
from kernels.algorithm import get_algorithm
from kernels.collective import resolve
from kernels.topology import Topology
from kernels.transports import TRANSPORTS, TransportUnavailable


@dataclass(frozen=True)
class RunContext:
    run_dir: Path
    run_id: str
    scenario: CollectiveScenario
    world_sizes: tuple[int, ...]  # the sizes this job measures
    progress: bool = True
    done_keys: frozenset[CaseKey] = frozenset()  # resumed: the cases with a record, skipped
    jobs: tuple[Settings, ...] | None = None  # the environments of this job's cases (None: all)
    fmt: str = DEFAULT_TABLE  # the table printed (bench/collective/console.py TABLES)

    def done(self, g: Group, algorithm: str) -> bool:
        """True when ``algorithm`` of group ``g`` has a record already (a resumed run)."""
        return bool(self.done_keys) and collective_key(
            g.collective, algorithm, g.transport, g.world_size, g.ranks_per_node, g.nbytes,
            g.dtype, g.op) in self.done_keys


def run_job(ctx: RunContext, out: Any = sys.stdout) -> int:
    """Run every group this job owns; returns the number of records written (rank 0)."""
    world = MPI.COMM_WORLD
    log = nccl_log.RankLog.of_this_process(os.environ) if world.rank == 0 else None
    written = 0
    con = Console(out, ctx.fmt, ctx.scenario.timing.style, enabled=world.rank == 0)
    with recording(world, ctx.run_dir) as (dog, writer):
        env = os.environ.get(JOB_ENV, "0")  # one job per environment when a scenario has variants
        _canary(ctx, world, f"start of job p={world.size}"
                + (f" (environment {env})" if env != "0" else ""))
        for w in ctx.world_sizes:
            sub = world.Split(0 if world.rank < w else MPI.UNDEFINED, world.rank)
            if sub != MPI.COMM_NULL:
                written += _run_world(ctx, sub, dog, writer, con, log)
                sub.Free()
            world.Barrier()
            _canary(ctx, world, f"after world size {w}")
    con.close()
    return written


def _canary(ctx: RunContext, comm: MPI.Comm, when: str) -> None:
    """A drift-canary reading on every rank of the job (see :mod:`bench.measure.canary`)."""
    reading = canary.measure(comm, when)
    if comm.rank == 0:
        canary.append(ctx.run_dir, reading)


def _run_world(ctx: RunContext, comm: MPI.Comm, dog: Watchdog, writer: ResultWriter | None,
               con: Console, log: nccl_log.RankLog | None = None) -> int:
    sc = ctx.scenario
    # mpi4py makes a communicator's context for pickled messages (a collective, with the GIL
    # held) at its first such call: made here, not inside a case, where a hung peer would block
    # the watchdog's thread with it
    comm.bcast(None, root=0)
    over = oversubscribed_comm(comm)
    plan: list[tuple[Topology, Group]] = []
    notes: list[str] = []
    emu = sc.emulate.job(comm.size) if sc.emulate is not None else None  # its nodes, its links
    for rpn in sc.ranks_per_node:
        topo = emu.placed.topology if emu is not None else topology_for(comm, rpn)
        plan += [(topo, g) for g in groups(sc, comm.size, topo.ranks_per_node, notes, ctx.jobs)]
    if comm.rank == 0:
        said = set(skips.reasons(ctx.run_dir))  # an earlier job of the run said these already
        for line in notes:
            if line not in said:
                con.say(f"# note: {line}")
                skips.note(ctx.run_dir, line)
    done, total = of_run(os.environ) or (0, len(plan))  # the whole run's count where known
    bar = Progress(total, enabled=ctx.progress and comm.rank == 0, done=done)
    extra = {"run_id": ctx.run_id, "scenario": sc.name, "oversubscribed": over,
             "hugepages": sc.hugepages, **thread_fields(), **(emu.describe() if emu else {})}
    hosts = comm.allgather(socket.gethostname())  # named by a case below its floor
    written = 0
    try:
        for transport_name in sc.transports:
            try:
                transport = TRANSPORTS.get(transport_name).create(comm, hugepages=sc.hugepages)
                transport = emu.wrap(transport) if emu is not None else transport
            except TransportUnavailable as e:
                if comm.rank == 0:
                    con.say(f"# skipped transport {transport_name}: {e}")
                    skips.note(ctx.run_dir, f"transport {transport_name}: {e}")
                continue
            for topo, g in plan:
                if g.transport != transport_name:
                    continue
                con.head((g.collective, g.world_size, g.ranks_per_node, g.transport), over)
                env = harness.Env(comm, transport, topo, extra, dog.where)
                written += _run_group(ctx, env, g, dog, writer, bar, con, log, hosts)
            transport.close()
    finally:
        bar.close()
    return written


def _run_group(ctx: RunContext, env: harness.Env, g: Group, dog: Watchdog,
               writer: ResultWriter | None, bar: Progress, con: Console,
               log: nccl_log.RankLog | None = None, hosts: list[str] | None = None) -> int:
    todo = tuple(a for a in g.algorithms if not ctx.done(g, a))  # resumed: only cases without a record
    if not todo:
        bar.advance()
        return 0
    g = dataclasses.replace(g, algorithms=todo)
    label = g.label()
    bar.start(f"p={g.world_size} {g.collective} {format_size(g.nbytes)} {g.dtype} {g.op} "
              f"{'/'.join(g.algorithms)}")
    dog.arm_case(label, ctx.scenario.case_timeout_s, world_size=g.world_size)
    records = harness.measure(env, g, ctx.scenario.timing, ctx.scenario.check)
    dog.disarm()
    bar.advance()
    _annotate(ctx.scenario, g, env.transport.family, records, log)
    for rec in records:
        assert writer is not None
        floors.hold(rec, ctx.scenario.expect, hosts or [])
        writer.write(rec)
    con.case(records)  # its rows; the ranks late in it are said once, at the job's end
    return len(records)


def _annotate(sc: CollectiveScenario, g: Group, family: str, records: list[dict[str, Any]],
              log: nccl_log.RankLog | None) -> None:
    """A variant's record: ``variant_of`` and ``settings``; a vendor call's on NCCL, what NCCL
    logged it chose while the group ran (``nccl_chosen``) and the settings it took; on MPI,
    ``mpi_chosen`` and what the library holds for the variant's settings (``mpi_settings``)."""
    variants = sc.variants()
    for rec in records:
        if (v := variants.get(rec["algorithm"])) is not None:
            rec.update(variant_of=v.of, settings=dict(v.env))
        if family == "mpi" and get_algorithm(g.collective, g.base(rec["algorithm"])).is_vendor:
            rec["mpi_chosen"] = mpi_t.NOT_REPORTED  # neither MPICH nor Open MPI reports it
            if v is not None and (names := mpi_t.variables_to_read(v.env)):
                rec["mpi_settings"] = mpi_t.held(names)  # what the library made of them
    if log is None:
        return
    chunk = log.take()  # every group's lines, so the next NCCL group reads its own only
    if family != "nccl":
        return
    func = resolve(g.collective).vendor_names.get("nccl")
    for rec in records:
        if get_algorithm(g.collective, g.base(rec["algorithm"])).is_vendor:
            rec.update(nccl_chosen=nccl_log.chosen(chunk, func) if func else [],
                       nccl_settings=dict(log.settings))

