"""``commbench run`` of a ``kind: replay`` scenario: one ``mpiexec`` of the trace's world size on
this host (the MPI-job base, :mod:`bench.launch.mpijob`), or inside the user's
own job of that many ranks; then the step's communication (:mod:`bench.replay.step`) said and
written to ``replay.json`` before the report."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.argtypes import UsageError
from bench.launch.mpijob import MpiJob, MpiKind, after_run, sweep_or_job
from bench.launch.selflaunch import say
from bench.replay.scenario import ReplayScenario
from bench.store import resume
from bench.store.records import iter_records


def run(args: argparse.Namespace, sc: ReplayScenario, sizes: tuple[int, ...] = ()) -> int:
    if sizes and sizes != (sc.world_size,):
        raise UsageError(f"--world-sizes: a replay runs on its trace's {sc.world_size} ranks "
                         "(commbench predict prices it at other scales)", "run")
    if getattr(args, "resume", None) is not None:
        raise UsageError("--resume: a replay is measured whole; run it again", "run")
    return sweep_or_job(ReplayKind, args, sc, sc.world_size)


def after_replay(run_dir: Path, args: argparse.Namespace) -> None:
    from bench.replay.step import write_summary

    for line in write_summary(run_dir, iter_records(run_dir, samples=False)):
        say(line)
    after_run(run_dir, not getattr(args, "no_report", False))


@dataclass
class ReplayJob(MpiJob):
    command = "run"

    def check(self, comm: Any) -> str | None:
        self.sizes = (comm.size,)
        if comm.size != self.sc.world_size:
            return (f"{self.source}: a replay of a {self.sc.world_size}-rank job needs "
                    f"{self.sc.world_size} ranks, this job has {comm.size}")
        return None

    def plan(self) -> resume.RunPlan:
        return resume.plan_run(self.sc, self.args.out, None)

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.replay.runner import run_replay

        show = comm.rank == 0 and not getattr(self.args, "no_progress", False)
        run_replay(comm, self.sc, run_dir, run_id, say if show else None)

    def after(self, run_dir: Path) -> None:
        after_replay(run_dir, self.args)


class ReplayKind(MpiKind):
    what = "replay"
    job = ReplayJob
