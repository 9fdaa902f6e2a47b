"""The collective kind's launch: a self-launched sweep (one ``mpiexec`` per world size and variant
environment, its ranks running ``commbench run RUN/scenario.yaml``) or, inside an MPI job, that
job's cases; and how any run ends (its directory, then its report)."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from bench.argtypes import UsageError
from bench.collective import flags, nccl_log, skips
from bench.collective import variants as var
from bench.collective.console import DEFAULT as DEFAULT_TABLE
from bench.collective.progress import PROGRESS_ENV, TTY_ENV
from bench.collective.scenario import (
    CollectiveScenario,
    ScenarioError,
    check_library,
    check_memory,
)
from bench.launch import launcher, loopback
from bench.launch.selflaunch import JobResult, Sweep, finish_run, say
from bench.launch.signals import job_interrupt
from bench.store import meta, resume
from bench.store.records import read_meta, write_meta
from bench.store.resume import RunDirError
from kernels.transports import TRANSPORTS

if TYPE_CHECKING:
    from bench.collective.case import Group


def run_collective(args: argparse.Namespace, sc: CollectiveScenario, sizes: tuple[int, ...]) -> int:
    """The collective kind: the cases of this MPI job, or a self-launched sweep (which tells
    ``--world-sizes`` from the scenario's, and from a resumed run's)."""
    if launcher.inside_mpi_job() or os.environ.get(launcher.WORKER_ENV):
        from bench.launch.threadlevel import request

        request(sc.thread_level)  # before MPI starts: mpi4py would ask for THREAD_MULTIPLE
        return in_job(args, CollectiveJob(args, sc, sizes))
    return _self_launch(args, sc, world_sizes_arg(args))


def world_sizes_arg(args: argparse.Namespace) -> tuple[int, ...]:
    """``--world-sizes`` (checked where parsed: positive, none twice), ``()`` when not given."""
    return tuple(args.world_sizes or ())


def check_sizes(sc: CollectiveScenario, sizes: tuple[int, ...], where: str) -> None:
    """Every fixed ``ranks_per_node`` must divide every world size, before anything launches."""
    if sc.emulate is not None:  # each world size must fit the emulated topology
        try:
            sc.emulate.check(sizes, sc.transports, False)
        except ValueError as e:
            raise ScenarioError(f"{where}: {e}") from None
    for w in sizes:
        for rpn in sc.ranks_per_node:
            if rpn != "auto" and w % int(rpn):
                raise ScenarioError(f"{where}: ranks_per_node {rpn} does not divide world size {w}")


def default_world_size(sc: CollectiveScenario) -> int:
    """Self-launched without world sizes: one rank per visible GPU when the scenario measures a
    device transport (and a GPU exists), else one rank per core."""
    if any(TRANSPORTS.get(t).device for t in sc.transports):
        gpus = meta.visible_gpu_count()
        if gpus:
            return gpus
    return psutil.cpu_count(logical=True) or 1


def pick_sizes(args: argparse.Namespace, sc: Any, given: tuple[int, ...],
               default: int) -> tuple[tuple[int, ...], str]:
    """The world sizes of a self-launched sweep and where they come from (for messages)."""
    if given:
        return given, "--world-sizes"
    if args.resume is not None and (kept := resume.recorded_sizes(args.resume)):
        return kept, f"{args.resume}/meta.json world_sizes"
    if sc.world_sizes:
        return tuple(sc.world_sizes), f"{args.scenario}: world_sizes"
    return (default,), f"{args.scenario}: world_sizes (empty: the default world size)"


def _self_launch(args: argparse.Namespace, sc: CollectiveScenario, given: tuple[int, ...]) -> int:
    try:  # every check before anything is launched or written
        sizes, where = pick_sizes(args, sc, given, default_world_size(sc))
        if not args.allow_empty and (why := skips.device_only_without_gpu(
                sc.transports, meta.visible_gpu_count())):
            raise UsageError(why)
        check_sizes(sc, sizes, where)
        check_memory(sc, str(args.scenario), max(sizes), psutil.virtual_memory().available)
        plan = resume.plan_run(sc, args.out, args.resume)
    except RunDirError as e:
        raise UsageError(str(e)) from None
    kind = CollectiveKind(args, sc, plan.run_dir, plan.resuming)
    kind.sizes = sizes  # the whole run's case count, for its one progress bar
    if plan.resuming and all(kind.first(w) is None for w in sizes):
        say(f"commbench: nothing to resume: every case of {plan.run_dir} has a record")
        return 0
    return start_sweep(kind, plan, args.scenario, sizes, finisher(args))


def start_sweep(kind: CollectiveKind, plan: resume.RunPlan, source: Path, sizes: tuple[int, ...],
                after: Callable[[Path], None], command: str = "", **how: str) -> int:
    """``kind``'s self-launched sweep under the mpiexec of mpi4py's MPI, its ranks reading
    ``RUN/scenario.yaml``; no mpiexec, or a run directory in use, is a UsageError (one line)
    before anything is written. ``how``: :class:`Sweep`'s words for an interrupted run."""
    try:
        mpi = launcher.probe_library()
        if isinstance(kind.sc, CollectiveScenario):  # its variants' settings fit this MPI
            check_library(kind.sc, str(source), mpi.family, mpi.library)
        kind.mpiexec = mpiexec = launcher.find_mpiexec(mpi)
        lock = plan.lock()
    except (launcher.LaunchError, RunDirError) as e:
        raise UsageError(str(e), command) from None
    info = plan.open(kind.sc, source, sizes, mpi.as_meta())
    info["mpiexec"] = {"path": mpiexec.path, "kind": mpiexec.kind, "version": mpiexec.version}
    if len(getattr(kind, "envs", ())) > 1:  # a job per environment and world size; a job's
        info["environments"] = [dict(e) for e in kind.envs]  # first_case is its index
    kind.scenario_file = flags.write_yaml(kind.sc, plan.run_dir)  # what the ranks read, overrides in
    return Sweep(plan.run_dir, info, isolate=not getattr(kind.args, "no_isolate", False),
                 allow_empty=getattr(kind.args, "allow_empty", False), **how
                 ).run(kind, sizes, lock, after=after)


class CollectiveKind:
    """One mpiexec per world size and environment (``start``: its index in :attr:`envs`; variants
    under settings run in jobs of their own); a failed job ends the sweep."""

    mpiexec: launcher.Mpiexec | None = None
    scenario_file: Path | None = None  # the run directory's scenario.yaml, once written
    sizes: tuple[int, ...] = ()  # the run's world sizes, where the progress counts the run

    def __init__(self, args: argparse.Namespace, sc: CollectiveScenario, run_dir: Path,
                 resuming: bool) -> None:
        self.args, self.sc, self.run_dir, self.resuming = args, sc, run_dir, resuming
        self._done = resume.done_collective(run_dir) if resuming else frozenset()
        ours = isinstance(sc, CollectiveScenario)  # the probe's kind reuses this one
        self.envs = var.environments(sc.variants()) if ours else ((),)
        self.logs_nccl = ours and self._logs_nccl()

    @property
    def launcher(self) -> str:
        m = self.mpiexec
        return f"commbench ({m.path}, {m.version}; this host only)" if m else "commbench"

    @property
    def family(self) -> str:
        return self.mpiexec.family if self.mpiexec else "unknown"

    def first(self, world: int) -> int | None:
        if not self.resuming and len(self.envs) == 1:
            return 0
        return self.next_start(world, -1)

    def next_start(self, world: int, start: int) -> int | None:
        """The next environment after ``start`` with a case to run at ``world``, or None."""
        return next((i for i in range(start + 1, len(self.envs)) if self._pending(world, i)), None)

    def _groups(self, world: int, index: int) -> Iterator[Group]:
        from bench.collective.case import groups

        for rpn in self.sc.ranks_per_node:  # self-launched: one host, so auto is the world size
            yield from groups(self.sc, world, world if rpn == "auto" else int(rpn),
                              jobs=(self.envs[index],))

    def _pending(self, world: int, index: int) -> bool:
        for g in self._groups(world, index):
            for alg in g.algorithms:
                key = resume.collective_key(g.collective, alg, g.transport, g.world_size,
                                            g.ranks_per_node, g.nbytes, g.dtype, g.op)
                if key not in self._done:
                    return True
        return False

    def _progress(self, world: int, start: int) -> str | None:
        """``DONE/TOTAL`` for the job at (``world``, ``start``): the run's groups before it (in
        the sweep's order) and all of them; None when the kind does not count them."""
        if not self.sizes or not isinstance(self.sc, CollectiveScenario):
            return None
        jobs = [(w, i) for w in self.sizes for i in range(len(self.envs))]
        counts = {j: sum(1 for _ in self._groups(*j)) for j in jobs}
        before = sum(counts[j] for j in jobs[:jobs.index((world, start))])
        return f"{before}/{sum(counts.values())}"

    def _logs_nccl(self) -> bool:
        """Whether a job may run a vendor call on an NCCL transport (whose choices it logs)."""
        from kernels.algorithm import get_algorithm

        variants = self.sc.variants()
        return any(TRANSPORTS.get(t).family == "nccl" for t in self.sc.transports) and any(
            a in variants or get_algorithm(c, a).is_vendor
            for c in self.sc.collectives for a in self.sc.algorithms_for(c))

    def command(self, world: int, start: int) -> tuple[list[str], dict[str, str]]:
        assert self.mpiexec is not None
        assert self.scenario_file is not None
        cmd = [*self.mpiexec.command(world), sys.executable, "-m", "bench", "run",
               str(self.scenario_file), "--out", str(self.run_dir), "--world-sizes", str(world)]
        if self.args.no_progress:
            cmd.append("--no-progress")
        if getattr(self.args, "format", None):
            cmd += ["--format", self.args.format]
        env = dict(os.environ, **{launcher.WORKER_ENV: self.run_dir.name, var.JOB_ENV: str(start)})
        env.update(self.envs[start])  # the variants' settings: read by the library as it starts
        if self.logs_nccl:
            (self.run_dir / "nccl").mkdir(exist_ok=True)  # NCCL opens its file, makes no folder
            env.update(nccl_log.debug_env(env, self.run_dir / "nccl", f"p{world}-env{start}"))
        if self.resuming:
            env[resume.RESUME_ENV] = "1"
        if sys.stderr.isatty():
            env[TTY_ENV] = "1"
        if (count := self._progress(world, start)) is not None:
            env[PROGRESS_ENV] = count
        return cmd, env

    def failed(self, job: JobResult) -> str:
        """What failed, for the line a failed job leaves."""
        return f"world size {job.world_size} failed" + (f" during case '{job.case}'" if job.case else "")

    def after_failure(self, sweep: Sweep, job: JobResult) -> int | None:
        why = f": {job.reason}" if job.reason else ""
        say(f"commbench: {self.failed(job)}{why} (mpiexec exit {job.returncode})")
        sweep.failures += 1
        sweep.stop()
        return None


def finisher(args: argparse.Namespace) -> Callable[[Path], None]:
    """What ends a run of ``args``: the run directory, then its report unless ``--no-report``."""
    return functools.partial(after_run, report=not args.no_report)


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


def in_job(args: argparse.Namespace, job: CollectiveJob) -> int:
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
            flags.write_yaml(job.sc, run_dir)
            if stop is not None:
                stop.run_dir = run_dir  # a time limit or cancel still leaves an interrupted run
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
class CollectiveJob:
    """The collective kind in an MPI job (each world size that fits runs on its first ranks);
    another kind that runs through :func:`in_job` overrides what differs."""

    args: argparse.Namespace
    sc: Any
    sizes: tuple[int, ...] = ()  # checked by :meth:`check`: the world sizes this job measures
    command = ""  # the command a one-line error names ("": the error names its source)

    @property
    def source(self) -> Path:
        return Path(self.args.scenario)

    def check(self, comm: Any) -> str | None:
        """On every rank: why this job cannot run the scenario (None: it can)."""
        self.sizes = tuple(w for w in (self.sizes or (comm.size,)) if w <= comm.size)
        if not self.sizes:
            return f"world_sizes: none fits in this job of {comm.size} ranks"
        try:
            check_sizes(self.sc, self.sizes, "world sizes of this job")
            from mpi4py import MPI

            version = MPI.Get_library_version()  # its variants' settings fit this MPI
            check_library(self.sc, str(self.source), launcher.library_family(version),
                          launcher.info_from(version, [], "").library)
        except ScenarioError as e:
            return str(e)
        return _check_host_memory(comm, self.sc, self.source)

    def plan(self) -> resume.RunPlan:
        """Rank 0 of the user's own job: the run directory."""
        return resume.plan_run(self.sc, self.args.out, self.args.resume)

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.collective.runner import RunContext, run_job

        resuming = self.args.resume is not None or os.environ.get(resume.RESUME_ENV) == "1"
        jobs = var.job_environments(os.environ, self.sc.variants())
        if not os.environ.get(launcher.WORKER_ENV) and comm.rank == 0:
            for v in self.sc.variants().values():
                if v.settings not in jobs:
                    say(f"# note: variant {v.name} left out: this job was not started with its "
                        f"settings ({' '.join(f'{k}={x}' for k, x in v.settings)}); commbench's "
                        "own launch starts one per variant", sys.stdout)
        run_job(RunContext(run_dir, run_id, self.sc, self.sizes,
                           progress=not self.args.no_progress, resume=resuming, jobs=jobs,
                           fmt=getattr(self.args, "format", None) or DEFAULT_TABLE))

    def after(self, run_dir: Path) -> None:
        finisher(self.args)(run_dir)


def _check_host_memory(comm: Any, sc: CollectiveScenario, source: Path) -> str | None:
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    error = None
    if local.rank == 0:
        try:
            check_memory(sc, str(source), local.size, psutil.virtual_memory().available)
        except ScenarioError as e:
            error = str(e)
    local.Free()
    return next((e for e in comm.allgather(error) if e), None)
