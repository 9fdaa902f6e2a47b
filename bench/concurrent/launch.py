"""``kind: concurrent`` through the MPI-job base (:mod:`bench.launch.mpijob`), at
``MPI_THREAD_MULTIPLE``; a self-launched job's ranks run BLAS on one thread each (the user's
setting wins)."""

from __future__ import annotations

import argparse
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.concurrent.scenario import ONE_BLAS_THREAD, ConcurrentScenario
from bench.launch import launcher
from bench.launch.mpijob import MpiJob, MpiKind, finisher, in_job, start_sweep
from bench.launch.selflaunch import one_world, usage_errors
from bench.store import resume

DEFAULT_WORLD = 4  # ranks of a self-launched run that names none
def handle(args: argparse.Namespace, sc: ConcurrentScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    inside = bool(os.environ.get(launcher.WORKER_ENV)) or launcher.inside_mpi_job()
    with usage_errors():
        world = one_world(sizes, "a concurrent run is one job") or sc.world_size or DEFAULT_WORLD
        sc = ConcurrentScenario.model_validate({**sc.model_dump(), "world_size": world})
        plan = None if inside else resume.plan_run(sc, args.out, getattr(args, "resume", None))
    if inside:
        from bench.launch.threadlevel import request

        request("multiple")  # BLAS threads: as the job was started (numpy is loaded already)
        return in_job(args, ConcurrentJob(args, sc))
    assert plan is not None
    return start_sweep(ConcurrentKind(args, sc, plan.run_dir, plan.resuming), plan,
                       Path(args.scenario), (world,), finisher(args))


class ConcurrentKind(MpiKind):
    """One mpiexec job; a failed one names the step it was in."""

    what = "concurrent run"

    def job_env(self, world: int, start: int) -> dict[str, str]:
        return {k: v for k, v in ONE_BLAS_THREAD.items() if k not in os.environ}


@dataclass
class ConcurrentJob(MpiJob):
    """The groups, then the overlap cases, on every rank of the job."""

    def check(self, comm: Any) -> str | None:
        self.sizes = (comm.size,)
        from bench.concurrent.define import communicators
        from bench.measure.recording import topology_for

        sc: ConcurrentScenario = self.sc
        try:
            topo = topology_for(comm, sc.ranks_per_node, equal_nodes=False)
            comms = [communicators(g.members, topo) for g in sc.groups]
        except ValueError as e:
            return f"{self.source}: {e}"
        from bench.launch.threadlevel import provided

        several = sum(comm.rank in c for g in comms for c in g) > 1  # this rank in two
        threads = comm.allreduce(several) or any(o.progress == "thread" for o in sc.overlap)
        if threads and provided() != "multiple":
            return (f"{self.source}: communicators on threads need MPI_THREAD_MULTIPLE; this "
                    f"MPI provided {provided()} (unset MPI4PY_RC_THREAD_LEVEL)")
        return None

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.concurrent.groups import run_groups
        from bench.concurrent.overlap import run_overlap
        from bench.launch.threadlevel import thread_fields
        from bench.measure.recording import oversubscribed_comm, recording, topology_for

        sc: ConcurrentScenario = self.sc
        extra = {"run_id": run_id, "scenario": sc.name, "oversubscribed": oversubscribed_comm(comm),
                 **thread_fields()}
        with recording(comm, run_dir) as (dog, writer):
            arm = functools.partial(dog.arm_case, timeout_s=sc.case_timeout_s)
            emit = writer.write if writer else None
            if sc.groups:
                run_groups(comm, sc, emit, extra, arm, dog.disarm)
            if sc.overlap:
                run_overlap(comm, sc, topology_for(comm, sc.ranks_per_node, equal_nodes=False), emit,
                            extra, arm, dog.disarm)
