"""The MPI-job base every kind measured under ``mpiexec`` shares: a self-launched sweep (one
``mpiexec`` per world size and start, its ranks running ``commbench run RUN/scenario.yaml``)
through :class:`MpiKind`, the same kind's ranks inside a job through :func:`in_job` and
:class:`MpiJob`, and how any run ends (its directory, then its report). A kind overrides what
differs: what it checks, measures, and does after; nothing here knows a kind."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.argtypes import UsageError
from bench.launch import launcher, loopback
from bench.launch.selflaunch import JobResult, Sweep, finish_run, say
from bench.launch.signals import job_interrupt
from bench.store import resume
from bench.store.records import iter_records, read_meta, write_meta
from bench.store.resume import RunDirError, write_yaml


def inside() -> bool:
    """Whether this process is a rank of an MPI job (self-launched or the user's own)."""
    return bool(os.environ.get(launcher.WORKER_ENV)) or launcher.inside_mpi_job()


def sweep_or_job(kind: type[MpiKind], args: argparse.Namespace, sc: Any, world: int | None,
                 after: Callable[[Path], None] | None = None, **how: str) -> int:
    """``sc`` run by ``kind``: this job's ranks, or a self-launched job of ``world`` ranks."""
    job = kind.job(args, sc)
    if inside():
        return in_job(args, job)
    plan = job.planned()
    assert world is not None
    return start_sweep(kind(args, sc, plan.run_dir, plan.resuming), plan, job.source, (world,),
                       after or job.after, job.command, **how)


def one_world(sizes: tuple[int, ...], what: str, command: str = "") -> int | None:
    """The one world size of ``--world-sizes`` (None: not given) of a kind that runs ``what``."""
    if len(sizes) > 1:
        raise UsageError(f"--world-sizes: {what}, got {','.join(map(str, sizes))}", command)
    return sizes[0] if sizes else None


def start_sweep(kind: MpiKind, plan: resume.RunPlan, source: Path, sizes: tuple[int, ...],
                after: Callable[[Path], None], command: str = "", **how: str) -> int:
    """``kind``'s self-launched sweep under the mpiexec of mpi4py's MPI, its ranks reading
    ``RUN/scenario.yaml``; no mpiexec, or a run directory in use, is a UsageError (one line)
    before anything is written; resumed with every case recorded, nothing is. ``how``:
    :class:`Sweep`'s words for an interrupted run."""
    if plan.resuming and all(kind.first(w) is None for w in sizes):
        say(f"commbench: nothing to resume: every case of {plan.run_dir} has a record")
        return 0
    try:
        mpi = launcher.probe_library()
        kind.check_library(str(source), mpi.family, mpi.library)
        kind.mpiexec = mpiexec = launcher.find_mpiexec(mpi)
        lock = plan.lock()
    except (launcher.LaunchError, RunDirError) as e:
        raise UsageError(str(e), command) from None
    info = plan.open(kind.sc, source, sizes, mpi.as_meta())
    info["mpiexec"] = {"path": mpiexec.path, "kind": mpiexec.kind, "version": mpiexec.version}
    if len(kind.envs) > 1:  # a job per environment and world size; a job's
        info["environments"] = [dict(e) for e in kind.envs]  # first_case is its index
    kind.scenario_file = write_yaml(kind.sc, plan.run_dir)  # what the ranks read, overrides in
    return Sweep(plan.run_dir, info, isolate=not getattr(kind.args, "no_isolate", False),
                 allow_empty=getattr(kind.args, "allow_empty", False), **how
                 ).run(kind, sizes, lock, after=after)


class MpiKind:
    """One mpiexec per world size (and per start a kind has several of); a failed job ends the
    sweep. ``what``: how a failed job's line names the run; ``job``: the kind's side in a job,
    whose case keys say what a resumed run has left."""

    mpiexec: launcher.Mpiexec | None = None
    scenario_file: Path | None = None  # the run directory's scenario.yaml, once written
    envs: tuple[Any, ...] = ((),)  # a kind that runs several jobs per world size sets these
    what = "run"
    job: type[MpiJob]

    def __init__(self, args: argparse.Namespace, sc: Any, run_dir: Path, resuming: bool) -> None:
        self.args, self.sc, self.run_dir, self.resuming = args, sc, run_dir, resuming

    @property
    def launcher(self) -> str:
        m = self.mpiexec
        return f"commbench ({m.path}, {m.version}; this host only)" if m else "commbench"

    @property
    def family(self) -> str:
        return self.mpiexec.family if self.mpiexec else "unknown"

    def check_library(self, source: str, family: str, library: str) -> None:
        """Before anything launches: ScenarioError where the scenario does not fit this MPI."""

    def first(self, world: int) -> int | None:
        """0: one job runs the cases; None: resumed, and every case at ``world`` has a record."""
        if not self.resuming:
            return 0
        job = self.job(self.args, self.sc)
        keys = job.cases(world)
        return 0 if keys is None or set(keys) - job.recorded(self.run_dir) else None

    def next_start(self, world: int, start: int) -> int | None:
        return None  # one job runs every case

    def job_env(self, world: int, start: int) -> dict[str, str]:
        """What a job's ranks get in their environment beyond the launcher's own."""
        return {}

    def command(self, world: int, start: int) -> tuple[list[str], dict[str, str]]:
        assert self.mpiexec is not None
        assert self.scenario_file is not None
        cmd = [*self.mpiexec.command(world), sys.executable, "-m", "bench", "run",
               str(self.scenario_file), "--out", str(self.run_dir), "--world-sizes", str(world)]
        if self.args.no_progress:
            cmd.append("--no-progress")
        if getattr(self.args, "format", None):  # the terminal table's style (run's --format)
            cmd += ["--format", self.args.format]
        env = dict(os.environ, **{launcher.WORKER_ENV: self.run_dir.name})
        env.update(self.job_env(world, start))
        if self.resuming:
            env[resume.RESUME_ENV] = "1"
        return cmd, env

    def failed(self, job: JobResult) -> str:
        """What failed, for the line a failed job leaves."""
        return f"{self.what} failed" + (f" during {job.case}" if job.case else "")

    def after_failure(self, sweep: Sweep, job: JobResult) -> int | None:
        why = f": {job.reason}" if job.reason else ""
        say(f"commbench: {self.failed(job)}{why} (mpiexec exit {job.returncode})")
        sweep.failures += 1
        sweep.stop()
        return None


def finisher(args: argparse.Namespace) -> Callable[[Path], None]:
    """What ends a run of ``args``: the run directory, then its report unless ``--no-report``."""
    return functools.partial(after_run, report=not getattr(args, "no_report", False))


def after_run(run_dir: Path, report: bool = True) -> None:
    """Print the run directory, then write the report and print its path (the last line)."""
    say(str(run_dir), sys.stdout)
    if not report:
        return
    try:
        from reports.render import render_run
    except ImportError:  # a checkout without the reporter still measures
        return
    try:
        say(str(render_run(run_dir)), sys.stdout)
    except Exception as e:  # the measurements are safe on disk; say what broke, keep going
        say(f"commbench: report not written: {type(e).__name__}: {e}")


def in_job(args: argparse.Namespace, job: MpiJob) -> int:
    """``job`` on every rank of this MPI job: a self-launched worker, or the user's own
    mpiexec/srun, whose rank 0 writes the run directory's meta. One rank's failure ends the
    job instead of leaving its peers hanging."""
    worker_of = os.environ.get(launcher.WORKER_ENV)
    stop = None if worker_of else job_interrupt()  # self-launched ranks: the parent handles them
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    error = job.check(comm)
    run_dir, info = getattr(args, "resume", None) or args.out, None
    if error is None and not worker_of and comm.rank == 0:  # the user's own mpiexec/srun
        try:
            plan = job.plan()
            run_dir, info = plan.run_dir, plan.open(job.sc, job.source, job.sizes)
        except RunDirError as e:
            error = str(e)
        except Exception as e:  # said on every rank below: the others wait in the bcast
            error = f"{type(e).__name__}: {e}"
    error = comm.bcast(error, root=0)
    if error is not None:
        if comm.rank == 0:
            raise UsageError(error, job.command)
        return 2
    if worker_of:
        run_id = worker_of
    else:
        run_dir = comm.bcast(run_dir, root=0)
        run_id = run_dir.name
        hosts = comm.gather(os.uname().nodename, root=0)
        doors = comm.gather([str(s) for s in loopback.of_this_rank()], root=0)
        if comm.rank == 0 and info is not None:
            info.update(launcher="user's MPI job", hosts=sorted(set(hosts or [])),
                        world_size=comm.size, status="running",
                        listening=loopback.by_host(hosts or [], doors or []))
            write_meta(run_dir, info)
            write_yaml(job.sc, run_dir)
            if stop is not None:
                stop.run_dir = run_dir  # a time limit or cancel still leaves an interrupted run
    if getattr(args, "resume", None) is not None or os.environ.get(resume.RESUME_ENV) == "1":
        job.done = comm.bcast(job.recorded(run_dir) if comm.rank == 0 else None, root=0)
    try:
        job.measure(comm, run_dir, run_id)
    except KeyboardInterrupt:
        os._exit(130)  # peers are being torn down too; skip MPI_Finalize, records are on disk
    except Exception as e:  # one rank's failure must end the job, not leave peers hanging
        sys.stderr.write(f"commbench: rank {comm.rank}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        comm.Abort(1)
    if worker_of or comm.rank != 0:
        return 0
    code = finish_run(run_dir, read_meta(run_dir),  # rank 0 of the user's job
                      allow_empty=getattr(args, "allow_empty", False))
    from bench.store import summary

    say(summary.of_run(run_dir, read_meta(run_dir)))  # the run's closing line
    job.after(run_dir)
    return code


@dataclass
class MpiJob:
    """A kind in an MPI job: what it checks on every rank, measures, and does after (rank 0 of
    the user's own job)."""

    args: argparse.Namespace
    sc: Any
    sizes: tuple[int, ...] = ()  # set by :meth:`check`: the world sizes this job measures
    done: frozenset[tuple[Any, ...]] = frozenset()  # resumed: the cases with a record (in_job)
    command = ""  # the command a one-line error names ("": the error names its source)

    @property
    def source(self) -> Path:
        return Path(getattr(self.args, "scenario", None)
                    or f"(commbench {self.command} command line)")

    def check(self, comm: Any) -> str | None:
        """On every rank: why this job cannot run the scenario (None: it can)."""
        self.sizes = (comm.size,)
        return None

    def plan(self) -> resume.RunPlan:
        """The run directory (rank 0 of the user's own job: :func:`in_job` says its error)."""
        return resume.plan_run(self.sc, self.args.out, getattr(self.args, "resume", None))

    def planned(self) -> resume.RunPlan:
        """:meth:`plan` for a self-launched run: a run directory that cannot be used is a
        UsageError naming :attr:`command`, before anything starts."""
        try:
            return self.plan()
        except RunDirError as e:
            raise UsageError(str(e), self.command) from None

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        """Every case not in :attr:`done`, records written by rank 0."""
        raise NotImplementedError

    def record_key(self, rec: dict[str, Any]) -> tuple[Any, ...] | None:
        """The case a record measured (None: no case of this kind). A kind that resumes says
        it; :meth:`measure` skips the cases in :attr:`done`."""
        return None

    def cases(self, world: int) -> list[tuple[Any, ...]] | None:
        """The keys of every case at ``world`` (None: known only inside the job)."""
        return None

    def recorded(self, run_dir: Path) -> frozenset[tuple[Any, ...]]:
        """The cases of this kind that ``run_dir`` has a record of."""
        keys = (self.record_key(r) for r in iter_records(run_dir, samples=False,
                                                         on_bad=lambda *_: None))
        return frozenset(k for k in keys if k is not None)

    def after(self, run_dir: Path) -> None:
        finisher(self.args)(run_dir)
