"""``commbench probe`` and ``kind: probe`` scenarios: self-launched through the collective kind's
launch (:class:`bench.collective.launch.CollectiveKind`: one ``mpiexec`` job whose ranks run
``commbench run RUN/scenario.yaml``), or inside the user's own mpiexec/srun job, where rank 0
writes the meta. A probe is never resumed: it measures the cluster as it is now.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import socket
import sys
from pathlib import Path
from typing import Any

import psutil

from bench.argtypes import UsageError
from bench.argtypes import say as say_usage
from bench.collective import flags
from bench.collective.launch import CollectiveKind, after_run
from bench.launch import inflight, launcher
from bench.launch.selflaunch import JobResult, Sweep, say
from bench.probe.scenario import ProbeScenario
from bench.scenario_base import ScenarioError
from bench.store import resume
from bench.store.records import ResultWriter, iter_records, read_meta, write_meta
from bench.store.resume import RunDirError

NOT_RESUMED = ("a probe cannot be resumed (it measures the cluster as it is now): run it again "
               "with a new --out")


def handle(args: argparse.Namespace, sc: ProbeScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run probe ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    inside = bool(os.environ.get(launcher.WORKER_ENV)) or launcher.inside_mpi_job()
    try:
        if getattr(args, "resume", None) is not None:
            raise ScenarioError(f"--resume: {NOT_RESUMED}")
        if len(sizes) > 1:
            raise ScenarioError(f"--world-sizes: a probe measures one world size, got "
                                f"{','.join(map(str, sizes))}")
        if sizes:
            sc = ProbeScenario.model_validate({**sc.model_dump(), "world_size": sizes[0]})
        if not inside:
            world = sc.world_size or sc.default_world_size(psutil.cpu_count(logical=True) or 1)
            sc = ProbeScenario.model_validate({**sc.model_dump(), "world_size": world})
            new_out(args.out)
            plan = resume.plan_run(sc, args.out, None)
            mpi = launcher.probe_library()
            mpiexec = launcher.find_mpiexec(mpi)
            lock = plan.lock()
    except (ScenarioError, launcher.LaunchError, RunDirError) as e:
        return _fail(str(e))
    except ValueError as e:  # the scenario's own checks (pydantic)
        return _fail(str(e).splitlines()[-1].strip())
    if inside:
        return in_job(args, sc)
    info = plan.open(sc, _source(args), (world,), mpi.as_meta())
    info["mpiexec"] = {"path": mpiexec.path, "kind": mpiexec.kind, "version": mpiexec.version}
    kind = ProbeKind(args, sc, plan.run_dir, False)
    kind.mpiexec, kind.scenario_file = mpiexec, flags.write_yaml(sc, plan.run_dir)
    return probe_sweep(plan.run_dir, info).run(kind, (world,), lock, after=after_probe)


def _fail(msg: str) -> int:
    return say_usage(UsageError(msg, "probe"))


def new_out(out: Path | None) -> None:
    """Refuse an ``--out`` that holds something (RunDirError, one line): a probe is never
    finished in a run directory that has one already."""
    if out is not None and out.is_dir() and any(out.iterdir()):
        raise RunDirError(f"--out {out}: not empty; {NOT_RESUMED}")


def _source(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "scenario", None) or "(commbench probe command line)")


def probe_sweep(run_dir: Path, info: dict[str, Any]) -> Sweep:
    """The self-launch loop; an interrupted probe says what is true of a probe: its records are
    kept for ``commbench report``, and it is run again, not resumed."""
    return Sweep(run_dir, info, during="{}",
                 next_step="(commbench report {run} shows them); " + NOT_RESUMED)


class ProbeKind(CollectiveKind):
    """The collective kind's one mpiexec job; a failed one names the round it was in."""

    def failed(self, job: JobResult) -> str:
        return f"probe of {job.world_size} ranks failed" + (f" during {job.case}" if job.case else "")


def after_probe(run_dir: Path) -> None:
    """The summary (classes, slow nodes and links), then the run directory and report path."""
    from bench.probe.summary import summary_lines

    sc = ProbeScenario.model_validate(read_meta(run_dir)["scenario"])
    for line in summary_lines(list(iter_records(run_dir, samples=False)), sc.threshold):
        say(line)
    after_run(run_dir)


def in_job(args: argparse.Namespace, sc: ProbeScenario) -> int:
    """The probe on every rank of this MPI job (self-launched worker or the user's job)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    worker = os.environ.get(launcher.WORKER_ENV)
    run_dir: Path | None = args.out
    hosts = comm.allgather(socket.gethostname())
    setup, info, error = None, None, None
    try:
        setup = sc.setup(hosts)
        if not worker and comm.rank == 0:
            new_out(args.out)
            plan = resume.plan_run(sc, args.out, None)
            run_dir, info = plan.run_dir, plan.open(sc, _source(args), (comm.size,))
    except (ValueError, RunDirError) as e:
        error = str(e)
    error = comm.bcast(error, root=0)
    if error is not None:
        return _fail(error) if comm.rank == 0 else 2
    assert setup is not None
    run_dir = comm.bcast(run_dir, root=0)
    assert run_dir is not None
    if info is not None:
        info.update(launcher="user's MPI job", hosts=sorted(set(hosts)), world_size=comm.size,
                    status="running")
        write_meta(run_dir, info)
    _measure(comm, sc, setup, run_dir, worker or run_dir.name, not args.no_progress)
    if worker or comm.rank != 0:
        return 0
    info = read_meta(run_dir)
    info.update(status="ok", reason=None, finished=dt.datetime.now(dt.timezone.utc).isoformat())
    write_meta(run_dir, info)
    after_probe(run_dir)
    return 0


def _measure(comm: Any, sc: ProbeScenario, setup: Any, run_dir: Path, run_id: str,
             progress: bool) -> None:
    from bench.collective.runner import oversubscribed_comm
    from bench.launch.threadlevel import may_abort_from_thread
    from bench.launch.watchdog import Watchdog
    from bench.probe.runner import Probe

    over = oversubscribed_comm(comm)
    dog = Watchdog(comm.rank, comm.Abort if may_abort_from_thread() else os._exit)
    writer = ResultWriter(run_dir) if comm.rank == 0 else None

    def arm(label: str) -> None:
        if writer:
            inflight.mark(run_dir, label, sc.round_timeout_s, world_size=comm.size)
        dog.arm(label, sc.round_timeout_s)

    extra = {"run_id": run_id, "scenario": sc.name, "oversubscribed": over,
             "layout": setup.layout.source}
    try:
        Probe(comm, setup.layout, sc.settings(), writer.write if writer else None, setup.delay,
              setup.wait, extra, say if progress else None, arm, pin=over).run(sc.confirm())
    except KeyboardInterrupt:
        os._exit(130)  # peers are being torn down too; records are on disk
    except Exception as e:  # one rank's failure must end the job, not leave peers hanging
        sys.stderr.write(f"commbench: rank {comm.rank}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        comm.Abort(1)
    finally:
        dog.close()
        if writer:
            writer.close()
            inflight.clear(run_dir)
