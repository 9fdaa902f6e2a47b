"""``commbench run`` for training scenarios: self-launch through :mod:`bench.training.torchrun`
once per world size (loopback only, the one loop of :mod:`bench.launch.selflaunch`), or run the
cases of the job we are in (torchrun, mpiexec, srun). A failed case gets a ``status: failed``
record and a new job goes on at the next case."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.argtypes import UsageError
from bench.argtypes import say as say_usage
from bench.launch.launcher import WORKER_ENV
from bench.launch.selflaunch import JobResult, Sweep, say
from bench.scenario_base import ScenarioError
from bench.store.records import ResultWriter, write_meta
from bench.store.resume import RESUME_ENV, RunDirError, plan_run, recorded_sizes
from bench.training import record
from bench.training.record import BACKEND_ENV, CASE_START_ENV, recorded
from bench.training.scenario import TrainingScenario


def handle(args: argparse.Namespace, sc: TrainingScenario, sizes: tuple[int, ...]) -> int:
    """``sizes``: ``--world-sizes`` or else the scenario's (empty: one rank self-launched)."""
    from bench.launch.launcher import inside_mpi_job
    from bench.training.backend import in_torch_job, pick_backend, visible_gpus

    resume = getattr(args, "resume", None)
    if os.environ.get(WORKER_ENV) or in_torch_job() or inside_mpi_job():
        return _in_job(args, sc, sizes)
    if resume is not None and not getattr(args, "world_sizes", None):
        sizes = recorded_sizes(resume) or sizes  # a resumed run keeps its world sizes
    sizes = sizes or (1,)
    try:
        # every job of the sweep on this host: auto is nccl only when the largest world size
        # gets a GPU per rank; ScenarioError (one line) before anything starts when nccl cannot
        gpus = 0 if sc.backend == "gloo" else visible_gpus()  # gloo: no GPU counted, no torch
        backend = pick_backend(sc.backend, max(sizes), gpus)
        plan = plan_run(sc, args.out, resume)
        lock = plan.lock()
    except ScenarioError as e:
        return say_usage(UsageError(f"{args.scenario}: {e}"))
    except RunDirError as e:
        return say_usage(UsageError(str(e)))
    kind = TrainingKind(args, sc, plan.run_dir, backend, plan.resuming)
    if plan.resuming and all(kind.first(w) is None for w in sizes):
        say(f"commbench: nothing to resume: every case of {plan.run_dir} has a record")
        return 0
    from bench.collective.launch import finisher

    info = plan.open(sc, args.scenario, sizes, _mpi_or_none())
    return Sweep(plan.run_dir, info, isolate=not getattr(args, "no_isolate", False),
                 allow_empty=getattr(args, "allow_empty", False)).run(
        kind, sizes, lock, after=finisher(args))


def _mpi_or_none() -> dict[str, str] | None:
    """The MPI behind mpi4py for meta (asked in a child: this parent must not initialise MPI)."""
    from bench.launch.launcher import LaunchError, probe_library

    try:
        return probe_library().as_meta()
    except LaunchError as e:
        return {"library": f"unknown ({e})"}


def _in_job(args: argparse.Namespace, sc: TrainingScenario, sizes: tuple[int, ...]) -> int:
    worker_of = os.environ.get(WORKER_ENV)
    resume = getattr(args, "resume", None)
    run_dir = resume or args.out
    if not worker_of and os.environ.get("RANK", os.environ.get("PMI_RANK", "0")) == "0":
        # the user's own job: rank 0 writes meta (ranks agree on --out; give one on clusters)
        try:
            plan = plan_run(sc, args.out, resume)
        except RunDirError as e:
            return say_usage(UsageError(str(e)))
        run_dir, info = plan.run_dir, plan.open(sc, args.scenario, sizes, _mpi_or_none())
        info.update(launcher="user's job (torchrun/srun/mpiexec)", status="running")
        write_meta(run_dir, info)
    if run_dir is None:
        return say_usage(UsageError("inside a torchrun/srun job, give every rank the same --out"))
    from bench.training.runner import JobContext, run_job  # a rank: torch from here on

    ctx = JobContext(run_dir, worker_of or run_dir.name, sc, sizes, bool(worker_of),
                     progress=not args.no_progress,
                     resume=resume is not None or os.environ.get(RESUME_ENV) == "1")
    return run_job(ctx)


class TrainingKind:
    """torchrun per world size; after a failed case, a new job goes on at the next one."""

    launcher = "commbench (torch.distributed.run --standalone, loopback)"
    family = "torch"

    def __init__(self, args: argparse.Namespace, sc: TrainingScenario, run_dir: Path,
                 backend: str, resuming: bool) -> None:
        self.args, self.sc, self.run_dir, self.backend = args, sc, run_dir, backend
        self.resuming = resuming

    def _pending(self, world: int, start: int = 0) -> list[int]:
        """Cases from ``start`` on with no record in results.jsonl (this run's or, resumed,
        earlier ones)."""
        cases = self.sc.cases(world)
        have = recorded(self.run_dir, cases, world)
        return [i for i in range(start, len(cases)) if i not in have]

    def first(self, world: int) -> int | None:
        return next(iter(self._pending(world)), None)

    def command(self, world: int, start: int) -> tuple[list[str], dict[str, str]]:
        run_dir = self.run_dir
        cmd = [sys.executable, "-m", "bench.training.torchrun", "--standalone",
               f"--nproc-per-node={world}", "-m", "bench", "run", str(self.args.scenario),
               "--out", str(run_dir), "--world-sizes", str(world)]
        if self.args.no_progress:
            cmd.append("--no-progress")
        env = dict(os.environ, **{WORKER_ENV: run_dir.name, CASE_START_ENV: str(start),
                                  BACKEND_ENV: self.backend, "OMP_NUM_THREADS": "1",
                                  "TORCHELASTIC_ERROR_FILE": str(run_dir / "torch-error.json")})
        if self.resuming:
            env[RESUME_ENV] = "1"
        return cmd, env

    def next_start(self, world: int, start: int) -> int | None:
        return None  # one job runs every case from its start

    def after_failure(self, sweep: Sweep, job: JobResult) -> int | None:
        w, rc = job.world_size, job.returncode
        if job.inflight is None or "index" not in job.inflight:
            left = self._pending(w, job.first_case)
            if left:  # no case was in flight: the job never reached its next case
                say(f"commbench: world size {w}: job exited with code {rc} before case "
                    f"{left[0] + 1} of {len(self.sc.cases(w))} started (see the ranks' errors above)")
                sweep.info["jobs"][-1]["failed_start"] = left[0]
                sweep.failures += 1
                return None
            sweep.warn(f"world size {w}: launcher exit {rc} after every case finished "
                       "(a rank aborted in shutdown); records kept")
            return None
        idx = int(job.inflight["index"])
        spec, model = self.sc.cases(w)[idx]
        err = f"job exited with code {rc} during this case (see stderr for the rank's error)"
        with ResultWriter(self.run_dir) as wr:
            wr.write(record.failed(self.sc, spec, model, w, err,
                                   {"run_id": self.run_dir.name, "scenario": self.sc.name}))
        say(f"commbench: case '{job.case}' failed (exit {rc}); going on")
        sweep.failures += 1
        return next(iter(self._pending(w, idx + 1)), None)
