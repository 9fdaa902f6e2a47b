"""``commbench bringup`` and ``kind: bringup``: run through the MPI-job base
(:mod:`bench.launch.mpijob`), self-launched or inside the user's own job, resumable like
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
from bench.launch import launcher
from bench.launch.mpijob import MpiJob, MpiKind, in_job, inside, one_world, start_sweep
from bench.launch.selflaunch import say
from bench.measure import floors
from bench.store.records import iter_records, read_meta, write_meta

VERDICT = "verdict.json"
INTERRUPTED = {"during": "{}", "next_step": "commbench run --resume {run} finishes it"}


def run(args: argparse.Namespace, sc: BringupScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run bring-up ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    world = one_world(sizes, "a bring-up runs one job", "bringup") or sc.world_size
    if not inside():
        world = world or max(2, psutil.cpu_count(logical=True) or 1)
    sc = sc.revalidated("bringup", world_size=world)
    job = BringupJob(args, sc)
    plan = None if inside() else job.planned()
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


@dataclass
class BringupJob(MpiJob):
    """The bring-up on every rank of an MPI job (self-launched worker or the user's job)."""

    command = "bringup"
    run_dir: Path | None = None  # rank 0 of the user's job: where the verdict is, once measured

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.bringup.expected import add_expected
        from bench.bringup.runner import run_stages
        from bench.measure.recording import oversubscribed_comm, recording

        sc: BringupScenario = self.sc
        if comm.rank == 0:
            self.run_dir = run_dir
        over = oversubscribed_comm(comm)
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
                       self.done, dog.where)

    def record_key(self, rec: dict[str, Any]) -> tuple[Any, ...] | None:
        """A measured case: (stage, hosts, collective, algorithm, bytes); its hosts are known
        only in the job, so a resumed bring-up always starts one."""
        if rec.get("kind") != "bringup" or rec.get("status") != "ok":
            return None
        return key(rec)

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


class BringupKind(MpiKind):
    """One mpiexec job; a failed one names the stage and round."""

    what = "bring-up"
    job = BringupJob


def key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["stage"], tuple(r["group_hosts"]), r["collective"], r["algorithm"], int(r["nbytes"]))
