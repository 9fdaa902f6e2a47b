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

from bench.concurrent.define import group_key, overlap_key
from bench.concurrent.scenario import ONE_BLAS_THREAD, ConcurrentScenario
from bench.launch.mpijob import (
    MpiJob,
    MpiKind,
    inside,
    one_world,
    sweep_or_job,
)

DEFAULT_WORLD = 4  # ranks of a self-launched run that names none
def run(args: argparse.Namespace, sc: ConcurrentScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    world = one_world(sizes, "a concurrent run is one job") or sc.world_size or DEFAULT_WORLD
    sc = sc.revalidated("", world_size=world)
    if inside():
        from bench.launch.threadlevel import request

        request("multiple")  # BLAS threads: as the job was started (numpy is loaded already)
    return sweep_or_job(ConcurrentKind, args, sc, world)


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
                run_groups(comm, sc, emit, extra, arm, dog.disarm, self.done)
            if sc.overlap:
                run_overlap(comm, sc, topology_for(comm, sc.ranks_per_node, equal_nodes=False), emit,
                            extra, arm, dog.disarm, self.done)

    def record_key(self, rec: dict[str, Any]) -> tuple[Any, ...] | None:
        """A group's step (who was timed, how, which round, at what size) or an overlap case."""
        if rec.get("kind") == "concurrent":
            return group_key(rec["group"], rec["mode"], rec["round"], rec["requested_nbytes"])
        if rec.get("kind") == "overlap":
            return overlap_key(rec, rec["requested_nbytes"])
        return None

    def cases(self, world: int) -> list[tuple[Any, ...]]:
        sc: ConcurrentScenario = self.sc
        steps = [group_key(g.name, mode, r, n) for n in sc.sizes for g in sc.groups
                 for r in range(sc.rounds) for mode in ("alone", "together")]
        return steps + [overlap_key(o.model_dump(), n) for o in sc.overlap for n in sc.sizes]


class ConcurrentKind(MpiKind):
    """One mpiexec job; a failed one names the step it was in."""

    what = "concurrent run"
    job = ConcurrentJob

    def job_env(self, world: int, start: int) -> dict[str, str]:
        return {k: v for k, v in ONE_BLAS_THREAD.items() if k not in os.environ}
