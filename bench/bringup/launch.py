"""``commbench bringup`` and ``kind: bringup``: run through the collective kind's launch
(:mod:`bench.collective.launch`), self-launched or inside the user's own job, resumable like
``run``; the verdict goes to ``verdict.json`` and exit 1 when a host or link is not ok."""

from __future__ import annotations

import argparse
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.bringup.scenario import BringupScenario
from bench.collective import floors
from bench.collective.launch import CollectiveJob, CollectiveKind, in_job, start_sweep
from bench.launch import launcher
from bench.launch.selflaunch import JobResult, one_world, say, usage_errors
from bench.store.records import iter_records, read_meta, write_meta

VERDICT = "verdict.json"
INTERRUPTED = {"during": "{}", "next_step": "commbench run --resume {run} finishes it"}


def handle(args: argparse.Namespace, sc: BringupScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run bring-up ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    inside = bool(os.environ.get(launcher.WORKER_ENV)) or launcher.inside_mpi_job()
    with usage_errors("bringup"):
        world = one_world(sizes, "a bring-up runs one job") or sc.world_size
        if not inside:
            world = world or max(2, psutil.cpu_count(logical=True) or 1)
        sc = BringupScenario.model_validate({**sc.model_dump(), "world_size": world})
        job = BringupJob(args, sc)
        plan = None if inside else job.plan()
    if plan is None:
        rc = in_job(args, job)
        mine = job.run_dir is not None and not os.environ.get(launcher.WORKER_ENV)
        return rc if rc or not mine else _verdict_exit_of(job.run_dir)  # type: ignore[arg-type]
    rc = start_sweep(BringupKind(args, sc, plan.run_dir, args.resume is not None), plan,
                     job.source, (world,), job.after, "bringup", **INTERRUPTED)
    return rc if rc else _verdict_exit_of(plan.run_dir)


def _verdict_exit_of(run_dir: Path) -> int:
    """1 when the run's verdict (written by rank 0) is not ok."""
    f = run_dir / VERDICT
    return 0 if not f.exists() or json.loads(f.read_text())["ok"] else 1


class BringupKind(CollectiveKind):
    """The collective kind's one mpiexec job; a failed one names the stage and round."""

    def first(self, world: int) -> int | None:
        return 0

    def failed(self, job: JobResult) -> str:
        return "bring-up failed" + (f" during {job.case}" if job.case else "")


@dataclass
class BringupJob(CollectiveJob):
    """The bring-up on every rank of an MPI job (self-launched worker or the user's job)."""

    command = "bringup"
    run_dir: Path | None = None  # rank 0 of the user's job: where the verdict is, once measured

    @property
    def source(self) -> Path:
        return Path(getattr(self.args, "scenario", None) or "(commbench bringup command line)")

    def check(self, comm: Any) -> str | None:
        self.sizes = (comm.size,)
        return None if comm.size >= 1 else "a bring-up needs ranks"

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.bringup.expected import add_expected
        from bench.bringup.runner import run_stages
        from bench.collective.runner import oversubscribed_comm, recording

        sc: BringupScenario = self.sc
        if comm.rank == 0:
            self.run_dir = run_dir
        over = oversubscribed_comm(comm)
        done = comm.bcast(_done(run_dir) if comm.rank == 0 else None, root=0)
        with recording(comm, run_dir) as (dog, writer):
            arm = functools.partial(dog.arm_case, timeout_s=sc.case_timeout_s)

            def emit(rec: dict[str, Any]) -> None:
                if sc.profile:
                    add_expected([rec], sc.profile)
                floors.hold(rec, sc.expect, rec["group_hosts"])
                assert writer is not None
                writer.write(rec)

            extra = {"run_id": run_id, "scenario": sc.name, "oversubscribed": over}
            progress = say if not self.args.no_progress else None
            run_stages(comm, sc, emit if writer else None, extra, progress, arm, dog.disarm,
                       done, dog.where)

    def after(self, run_dir: Path) -> None:
        """The verdict, written to ``verdict.json`` and said line by line, then the run
        directory and the report's path."""
        from bench.bringup.verdict import judge

        sc = BringupScenario.model_validate(read_meta(run_dir)["scenario"])
        v = judge(iter_records(run_dir, samples=False), sc.slow_pct)
        (run_dir / VERDICT).write_text(json.dumps(v.as_dict(), indent=1) + "\n")
        meta = read_meta(run_dir)
        write_meta(run_dir, {**meta, "verdict": v.word})  # the report's run table shows it
        say(f"# bring-up verdict: {v.word if v.ok else 'NOT ok'}")
        for line in v.lines():
            say(f"#   {line}")
        super().after(run_dir)


def _done(run_dir: Path) -> frozenset[tuple[Any, ...]]:
    """Cases a resumed bring-up has already: (stage, hosts, collective, algorithm, bytes)."""
    return frozenset(key(r) for r in iter_records(run_dir, samples=False)
                     if r.get("kind") == "bringup" and r.get("status") == "ok")


def key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["stage"], tuple(r["group_hosts"]), r["collective"], r["algorithm"], int(r["nbytes"]))
