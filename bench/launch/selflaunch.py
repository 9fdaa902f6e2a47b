"""The one self-launch loop, collective (mpiexec) and training (torchrun) sweeps alike: a job per
world size (more where a kind resumes or needs several), ``meta.json`` rewritten after every job;
failures, signals and clean-up as docs/failures.md says."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from bench.argtypes import UsageError
from bench.collective import floors, skips
from bench.launch import forensics, inflight, isolate, loopback, rankstate, scratch, shmclean
from bench.launch.signals import JOB_ENV, SignalGuard, end_job, end_leftovers, interrupted, tree
from bench.launch.watchdog import TIMEOUT_EXIT
from bench.scenario_base import ScenarioError
from bench.store.kinds import now
from bench.store.records import iter_records, write_meta
from bench.store.resume import RunDirError


def say(line: str, out: Any = None) -> None:
    """Print one line; a closed terminal (SIGHUP) must not turn into a traceback."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=out or sys.stderr, flush=True)


def one_world(sizes: tuple[int, ...], what: str) -> int | None:
    """The one world size of ``--world-sizes`` (None: not given) of a kind that runs ``what``."""
    if len(sizes) > 1:
        raise ScenarioError(f"--world-sizes: {what}, got {','.join(map(str, sizes))}")
    return sizes[0] if sizes else None


@contextlib.contextmanager
def usage_errors(command: str = "") -> Iterator[None]:
    """A scenario's or run directory's error in the block as a one-line UsageError."""
    try:
        yield
    except (ScenarioError, RunDirError) as e:
        raise UsageError(str(e), command) from None
    except ValueError as e:  # the scenario's own checks (pydantic)
        raise UsageError(str(e).splitlines()[-1].strip(), command) from None


@dataclass(frozen=True)
class JobResult:
    world_size: int
    returncode: int
    seconds: float
    inflight: dict[str, Any] | None  # the marker the job left: the case it was in
    first_case: int = 0
    signal: str | None = None  # set when a signal to the parent ended the job
    strays: int = 0  # processes left after the launcher exited (killed by us)
    ended: float = 0.0  # time.time() when the job was over
    shm_removed: int = 0  # /dev/shm files its killed ranks left, removed by us
    stuck: tuple[int, ...] = ()  # pids of its processes that could not be ended (in the kernel)
    listening: tuple[loopback.Listener, ...] = ()  # its listening sockets, seen as its first case began
    hang: dict[str, Any] | None = None  # what its ranks were doing when it hung or one died

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.signal is None

    @property
    def case(self) -> str | None:
        return self.inflight.get("case") if self.inflight else None

    @property
    def reason(self) -> str | None:
        m = self.inflight or {}
        if self.signal is None and self.hang is not None:
            return str(self.hang["why"])
        if self.signal is None and "timeout_s" in m and (
                self.returncode == TIMEOUT_EXIT or self.ended - m.get("since", self.ended) >= m["timeout_s"]):
            # said here too: the abort can end the job before the aborting rank's line is out, and
            # the launcher's exit code may be a killed rank's rather than the watchdog's 124
            return f"exceeded case_timeout_s={m['timeout_s']:g} (a rank hung or died)"
        return None

    def as_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"world_size": self.world_size, "returncode": self.returncode,
                               "seconds": round(self.seconds, 3), "failed_case": self.case,
                               "reason": self.reason}
        if self.signal:
            out.update(signal=self.signal, failed_case=None, interrupted_case=self.case)
        elif self.hang is not None:
            out["hang"] = self.hang
        more = {"first_case": self.first_case, "strays_killed": self.strays,
                "shm_removed": self.shm_removed, "stuck_pids": list(self.stuck),
                "listening": [str(s) for s in self.listening]}
        return out | {k: v for k, v in more.items() if v}  # meta.json sorts its keys


def run_job(cmd: list[str], env: dict[str, str], run_dir: Path, world: int, guard: SignalGuard,
            first_case: int = 0) -> JobResult:
    """Run one job to its end, or end it with all its processes when the guard sees a signal;
    over when every process of it is gone, its orphaned files and ``TMPDIR`` removed."""
    with scratch.job_tmpdir() as tmp:
        return _run(cmd, {**env, "TMPDIR": str(tmp)}, run_dir, world, guard, first_case)


def _run(cmd: list[str], env: dict[str, str], run_dir: Path, world: int, guard: SignalGuard,
         first_case: int) -> JobResult:
    token = uuid.uuid4().hex
    before = shmclean.snapshot()
    rankstate.clear(run_dir)  # a previous job's rank slots and hang are not this job's
    forensics.take(run_dir)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env={**env, JOB_ENV: token, "PYTHONUNBUFFERED": "1"},
                            start_new_session=True)
    rc: int | None = None
    held: set[shmclean.Entry] = set()
    known: dict[int, psutil.Process] = {}
    listening: set[loopback.Listener] = set()
    marker, seen, last = run_dir / inflight.INFLIGHT, 0.0, 0.0
    try:
        while rc is None:
            if guard.signum is not None:
                rc, stopped = end_job(proc, token)
                held |= stopped
                break
            mtime = 0.0
            with contextlib.suppress(OSError):
                mtime = marker.stat().st_mtime
            if mtime != seen and (not seen or time.monotonic() - last >= 1.0):  # a case began
                procs = tree(proc.pid)
                known.update((p.pid, p) for p in procs)
                held |= shmclean.held_by(p.pid for p in procs)
                if not seen:  # once, as the first case begins: the job listens from MPI_Init
                    listening.update(loopback.listening(p.pid for p in procs))
                seen, last = mtime, time.monotonic()
            try:
                rc = proc.wait(0.2 if seen else 0.02)  # quick until it has seen case 0 begin
            except subprocess.TimeoutExpired:
                continue
    except BaseException:  # whatever goes wrong here, the job must not outlive its launcher
        shmclean.remove_orphans(held | end_job(proc, token)[1], before)
        end_leftovers(token, known.values(), grace_s=0)
        raise
    strays, left, stuck = end_leftovers(token, known.values())
    removed = shmclean.remove_orphans(held | left, before)
    hang = forensics.take(run_dir)  # what its ranks were doing, when one explained a hang
    return JobResult(world, rc, time.monotonic() - t0, inflight.take(run_dir), first_case,
                     guard.name, strays, time.time(), len(removed),
                     tuple(p.pid for p in stuck), tuple(sorted(listening)), hang)


class Kind(Protocol):
    """What a scenario kind adds to the loop."""

    launcher: str  # meta.json's description of how ranks are started
    family: str  # whose loopback settings its jobs get (a key of bench.launch.loopback.FAMILIES)

    def first(self, world: int) -> int | None:
        """The first case index to run at ``world`` (None: every case has a record)."""

    def command(self, world: int, start: int) -> tuple[list[str], dict[str, str]]:
        """The job's command line and environment."""

    def next_start(self, world: int, start: int) -> int | None:
        """After a job started at ``start`` ended well: the start of the next job at ``world``
        (a kind may need several, e.g. one per environment), or None."""

    def after_failure(self, sweep: Sweep, job: JobResult) -> int | None:
        """Called for a failed job: the case index to go on from, or None for the next world
        size; :meth:`Sweep.stop` ends the sweep."""


@dataclass
class Sweep:
    run_dir: Path
    info: dict[str, Any]  # meta.json, rewritten after every job
    failures: int = 0
    stopped: bool = False
    # how an interrupted run's line names the case and says what to do next ({run}: run_dir)
    during: str = "case '{}'"
    next_step: str = "(finish with --resume {run})"
    isolate: bool = True  # run each job in a private network namespace where the kernel allows
    allow_empty: bool = False  # a run that recorded nothing ends ok (else failed: skips.py)

    def stop(self) -> None:
        self.stopped = True

    def save(self, **fields: Any) -> None:
        self.info.update(fields)
        write_meta(self.run_dir, self.info)

    def run(self, kind: Kind, sizes: tuple[int, ...], lock: int,
            after: Callable[[Path], None] | None = None) -> int:
        """Every world size in turn; returns the exit code (0, 1, or 128 + signal). ``lock``:
        the run directory's lock (:meth:`bench.store.resume.RunPlan.lock`), released at the end."""
        try:
            with SignalGuard() as guard:
                last = self._loop(kind, sizes, guard)
                if guard.signum is not None:
                    return self._interrupted(guard, last)
                code = self._finish()
        except Exception as e:  # a bug: meta.json still says how the run ended
            self.save(status="failed", reason=f"{type(e).__name__}: {e}", finished=now())
            raise
        finally:
            os.close(lock)
        if after:
            after(self.run_dir)
        return code

    def _loop(self, kind: Kind, sizes: tuple[int, ...], guard: SignalGuard) -> JobResult | None:
        self.info.setdefault("jobs", [])
        self.info.setdefault("warnings", [])
        iso = isolate.decide(self.isolate)
        self.save(launcher=kind.launcher, status="running", isolation=iso.as_meta())
        if not iso.isolated and self.isolate:  # refused: say so once; turned off: the user knows
            say(f"# {iso.line}")
        last = None
        for w in sizes:
            start = kind.first(w)
            while start is not None and guard.signum is None and not self.stopped:
                cmd, env = kind.command(w, start)
                confined = loopback.confine(env, kind.family)  # one host: listen on loopback only
                self.info["listen"] = confined.as_meta()
                last = run_job(iso.wrap(cmd), confined.env, self.run_dir, w, guard, start)
                self.info["jobs"].append(last.as_meta())
                self.save()
                if last.strays and last.signal is None:
                    self.warn(f"world size {w}: killed {last.strays} processes left by the launcher")
                if not iso.isolated and (wide := loopback.unexpected(last.listening, kind.family)):
                    self.warn(f"world size {w}: the job listened beyond loopback, where its "
                              f"settings should have kept it: {', '.join(map(str, wide))}")
                if last.stuck:
                    self.warn(f"world size {w}: processes {', '.join(map(str, last.stuck))} of the "
                              "job could not be killed (stuck in the kernel); their /dev/shm "
                              "files are left")
                if last.signal is not None:
                    break
                start = kind.next_start(w, start) if last.ok else kind.after_failure(self, last)
            if guard.signum is not None or self.stopped:
                break
        return last

    def warn(self, msg: str) -> None:
        self.info["warnings"].append(msg)
        say(f"commbench: warning: {msg}")

    def _interrupted(self, guard: SignalGuard, last: JobResult | None) -> int:
        case = last.case if last and last.signal else None
        kept = count_records(self.run_dir)
        self.save(**interrupted(guard.name, case))
        where = f" during {self.during.format(case)}" if case else ""
        say(f"commbench: interrupted by {guard.name}{where}; {kept} records kept in {self.run_dir} "
            + self.next_step.format(run=self.run_dir))
        return guard.exit_code

    def _finish(self) -> int:
        from bench.store import summary

        code = finish_run(self.run_dir, self.info, self.failures, self.allow_empty)
        say(summary.of_run(self.run_dir, self.info))  # the run's closing line
        return code


def finish_run(run_dir: Path, info: dict[str, Any], failures: int = 0,
               allow_empty: bool = False) -> int:
    """A run's end in its ``meta.json`` (``info``): failed for failed jobs, cases below their
    floors or wrong, or no record at all (unless ``allow_empty``), each said; returns the exit
    code (0 or 1)."""
    empty = not failures and not allow_empty and count_records(run_dir) == 0
    wrong = sum(1 for r in _records(run_dir) if r.get("status") == "wrong")
    below = floors.failures(_records(run_dir))
    reasons = []
    if failures:
        reasons.append(f"{failures} job{'s' if failures > 1 else ''} failed")
    if below:
        reasons.append(floors.summary(below))
    if wrong:
        reasons.append(f"{wrong} case{'s' if wrong > 1 else ''} wrong (elements differ from "
                       "the exact expected values)")
    if empty:
        reasons.append(skips.empty_reason(run_dir))
    for stale in ("signal", "interrupted_case"):  # from an interrupted run now resumed
        info.pop(stale, None)
    info.update(status="failed" if reasons else "ok", reason="; ".join(reasons) or None,
                finished=now())
    write_meta(run_dir, info)
    for line in below:
        say(f"commbench: below its floor: {line}")
    if wrong:
        say(f"commbench: {reasons[-1]}: the run failed")
    if empty:
        say(f"commbench: {reasons[-1]}")
    return 1 if reasons else 0


def _records(run_dir: Path) -> Iterator[dict[str, Any]]:
    return iter_records(run_dir, samples=False, on_bad=lambda *_: None)


def count_records(run_dir: Path) -> int:
    return sum(1 for _ in _records(run_dir))

