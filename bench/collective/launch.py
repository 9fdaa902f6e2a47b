"""The collective kind's launch through the MPI-job base (:mod:`bench.launch.mpijob`): a
self-launched sweep (one ``mpiexec`` per world size and variant environment) or, inside an MPI
job, that job's cases."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from bench import argtypes
from bench.argtypes import UsageError
from bench.collective import nccl_log
from bench.collective import variants as var
from bench.collective.console import DEFAULT as DEFAULT_TABLE
from bench.collective.progress import PROGRESS_ENV, TTY_ENV
from bench.collective.scenario import (
    CollectiveScenario,
    ScenarioError,
    check_library,
    check_memory,
)
from bench.launch import launcher
from bench.launch.mpijob import MpiJob, MpiKind, finisher, in_job, inside, start_sweep
from bench.launch.selflaunch import JobResult, say
from bench.measure import skips
from bench.store import meta, resume
from bench.store.records import KEY_FIELDS
from bench.store.resume import RunDirError
from kernels.transports import TRANSPORTS

if TYPE_CHECKING:
    from bench.measure.case import Group


def run(args: argparse.Namespace, sc: CollectiveScenario, sizes: tuple[int, ...]) -> int:
    """The collective kind: the cases of this MPI job, or a self-launched sweep (which tells
    ``--world-sizes`` from the scenario's, and from a resumed run's)."""
    if inside():
        from bench.launch.threadlevel import request

        request(sc.thread_level)  # before MPI starts: mpi4py would ask for THREAD_MULTIPLE
        return in_job(args, CollectiveJob(args, sc, sizes))
    return _self_launch(args, sc, argtypes.world_sizes_arg(args))


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
    return start_sweep(kind, plan, args.scenario, sizes, finisher(args))


class CollectiveKind(MpiKind):
    """One mpiexec per world size and environment (``start``: its index in :attr:`envs`; variants
    under settings run in jobs of their own); a failed job ends the sweep."""

    sizes: tuple[int, ...] = ()  # the run's world sizes, where the progress counts the run

    def __init__(self, args: argparse.Namespace, sc: CollectiveScenario, run_dir: Path,
                 resuming: bool) -> None:
        super().__init__(args, sc, run_dir, resuming)
        self._done = CollectiveJob(args, sc).recorded(run_dir) if resuming else frozenset()
        self.envs = var.environments(sc.variants())
        self.logs_nccl = self._logs_nccl()

    def check_library(self, source: str, family: str, library: str) -> None:
        check_library(self.sc, source, family, library)  # its variants' settings fit this MPI

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
        if not self.sizes:
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

    def job_env(self, world: int, start: int) -> dict[str, str]:
        env = {var.JOB_ENV: str(start), **dict(self.envs[start])}  # the variants' settings
        if self.logs_nccl:
            (self.run_dir / "nccl").mkdir(exist_ok=True)  # NCCL opens its file, makes no folder
            env.update(nccl_log.debug_env(dict(os.environ, **env), self.run_dir / "nccl",
                                          f"p{world}-env{start}"))
        if sys.stderr.isatty():
            env[TTY_ENV] = "1"
        if (count := self._progress(world, start)) is not None:
            env[PROGRESS_ENV] = count
        return env

    def failed(self, job: JobResult) -> str:
        """What failed, for the line a failed job leaves."""
        return f"world size {job.world_size} failed" + (f" during case '{job.case}'" if job.case else "")


@dataclass
class CollectiveJob(MpiJob):
    """The collective kind in an MPI job (each world size that fits runs on its first ranks)."""

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

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.collective.runner import RunContext, run_job

        jobs = var.job_environments(os.environ, self.sc.variants())
        if not os.environ.get(launcher.WORKER_ENV) and comm.rank == 0:
            for v in self.sc.variants().values():
                if v.settings not in jobs:
                    say(f"# note: variant {v.name} left out: this job was not started with its "
                        f"settings ({' '.join(f'{k}={x}' for k, x in v.settings)}); commbench's "
                        "own launch starts one per variant", sys.stdout)
        run_job(RunContext(run_dir, run_id, self.sc, self.sizes,
                           progress=not self.args.no_progress, done_keys=self.done, jobs=jobs,
                           fmt=getattr(self.args, "format", None) or DEFAULT_TABLE))

    def record_key(self, rec: dict[str, Any]) -> tuple[Any, ...] | None:
        """A measured case (or a wrong one): :func:`bench.store.resume.collective_key`."""
        if rec.get("kind", "collective") != "collective":
            return None
        try:
            return resume.collective_key(*(rec[f] for f in KEY_FIELDS[1:]))
        except (KeyError, TypeError, ValueError):  # not a case record: it names no case
            return None


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
