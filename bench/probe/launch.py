"""``commbench probe`` and ``kind: probe`` scenarios, through the MPI-job base
(:mod:`bench.launch.mpijob`). A probe is never resumed: it measures the cluster as it is now."""

from __future__ import annotations

import argparse
import functools
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.argtypes import UsageError
from bench.launch.mpijob import (
    MpiJob,
    MpiKind,
    after_run,
    inside,
    one_world,
    sweep_or_job,
)
from bench.launch.selflaunch import JobResult, say
from bench.probe.scenario import ProbeScenario, Setup
from bench.store import resume
from bench.store.records import iter_records, read_meta
from bench.store.resume import RunDirError

NOT_RESUMED = ("a probe cannot be resumed (it measures the cluster as it is now): run it again "
               "with a new --out")
# how an interrupted probe's line names the round and says what is true of it (Sweep's words)
INTERRUPTED = {"during": "{}", "next_step": "(commbench report {run} shows them); " + NOT_RESUMED}


def run(args: argparse.Namespace, sc: ProbeScenario, sizes: tuple[int, ...] = ()) -> int:
    """Run probe ``sc``; ``sizes``: ``--world-sizes`` of ``commbench run`` (at most one)."""
    if getattr(args, "resume", None) is not None:
        raise UsageError(f"--resume: {NOT_RESUMED}", "probe")
    if given := one_world(sizes, "a probe measures one world size", "probe"):
        sc = sc.revalidated("probe", world_size=given)
    if not inside():
        world = sc.world_size or sc.default_world_size(psutil.cpu_count(logical=True) or 1)
        sc = sc.revalidated("probe", world_size=world)
    return sweep_or_job(ProbeKind, args, sc, sc.world_size, **INTERRUPTED)


def after_probe(run_dir: Path) -> None:
    """The summary (classes, slow nodes and links), then the run directory and report path."""
    from bench.probe.summary import summary_lines

    sc = ProbeScenario.model_validate(read_meta(run_dir)["scenario"])
    for line in summary_lines(list(iter_records(run_dir, samples=False)), sc.threshold):
        say(line)
    after_run(run_dir)


@dataclass
class ProbeJob(MpiJob):
    """The probe on every rank of an MPI job (self-launched worker or the user's job)."""

    setup: Setup | None = None  # the job's layout, from :meth:`check`
    command = "probe"

    def check(self, comm: Any) -> str | None:
        self.sizes = (comm.size,)
        try:
            self.setup = self.sc.setup(comm.allgather(socket.gethostname()))
        except ValueError as e:
            return str(e)
        return None

    def plan(self) -> resume.RunPlan:
        """A new run directory: an ``--out`` that holds something is refused (RunDirError, one
        line), as a probe is never finished in a run directory that has one already."""
        out = self.args.out
        if out is not None and out.is_dir() and any(out.iterdir()):
            raise RunDirError(f"--out {out}: not empty; {NOT_RESUMED}")
        return super().plan()

    def measure(self, comm: Any, run_dir: Path, run_id: str) -> None:
        from bench.measure.recording import oversubscribed_comm, recording
        from bench.probe.runner import Probe

        sc, setup, over = self.sc, self.setup, oversubscribed_comm(comm)
        assert setup is not None
        with recording(comm, run_dir) as (dog, writer):
            arm = functools.partial(dog.arm_case, timeout_s=sc.round_timeout_s)

            extra = {"run_id": run_id, "scenario": sc.name, "oversubscribed": over,
                     "layout": setup.layout.source}
            progress = say if not self.args.no_progress else None
            Probe(comm, setup.layout, sc.settings(), writer.write if writer else None, setup.delay,
                  setup.wait, extra, progress, arm, pin=over).run(sc.confirm())

    def after(self, run_dir: Path) -> None:
        after_probe(run_dir)


class ProbeKind(MpiKind):
    """One mpiexec job; a failed one names the round it was in."""

    job = ProbeJob

    def failed(self, job: JobResult) -> str:
        return f"probe of {job.world_size} ranks failed" + (f" during {job.case}" if job.case else "")
