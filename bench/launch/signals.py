"""Stopping a self-launched run (docs/failures.md): SIGINT, SIGTERM and SIGHUP end every process of
the job. Its processes carry a token in their environment (``COMMBENCH_JOB``), inherited whatever
session or process group they put themselves in; they are stopped (SIGSTOP, so that none forks
meanwhile), then killed."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import psutil

from bench.launch.shmclean import Entry, held_by

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
JOB_ENV = "COMMBENCH_JOB"  # a fresh token per job, in the environment of all its processes


class SignalGuard:
    """While active, the first of SIGINT/SIGTERM/SIGHUP is remembered in :attr:`signum`."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, object] = {}

    def __enter__(self) -> SignalGuard:
        for s in STOP_SIGNALS:
            self._old[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum

    @property
    def name(self) -> str | None:
        return signal.Signals(self.signum).name if self.signum is not None else None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or 0)


def job_processes(token: str, root: int | None = None, key: str = JOB_ENV,
                  known: Iterable[psutil.Process] = ()) -> list[psutil.Process]:
    """Live processes of the job: ``root`` and its descendants, the ``known`` ones (psutil
    checks a pid's start time, so a reused pid is not taken for one), and any process whose
    environment carries ``token`` in ``key`` (a rank that left its parent's session or tree)."""
    found = {p.pid: p for p in [*(tree(root) if root is not None else []), *known]
             if p.pid != os.getpid()}
    for p in psutil.process_iter():
        if p.pid in found or p.pid == os.getpid():
            continue
        try:
            if p.environ().get(key) == token:
                found[p.pid] = p
        except psutil.Error:
            continue
    return [p for p in found.values() if _alive(p)]


def tree(root: int) -> list[psutil.Process]:
    """``root`` and its descendants (cheap: no environments read)."""
    try:
        top = psutil.Process(root)
        return [top, *top.children(recursive=True)]
    except psutil.Error:
        return []


def _alive(p: psutil.Process) -> bool:
    """Not yet gone: a zombie whose other threads still exit (a killed multi-threaded rank's
    leader turns zombie first) still holds its memory, mappings included."""
    try:
        if p.status() != psutil.STATUS_ZOMBIE:
            return p.is_running()
        return p.num_threads() > 1
    except psutil.Error:
        return False


def _wait_dead(procs: list[psutil.Process], wait_s: float = 30.0) -> list[psutil.Process]:
    """Until each is gone (a zombie whose threads have all exited: its memory is released),
    killing again every second (a signal can race a fork or an exec); those still alive at
    ``wait_s`` (a process stuck in the kernel cannot be killed)."""
    deadline = time.monotonic() + wait_s
    last_kill = time.monotonic()
    alive = [p for p in procs if _alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        if time.monotonic() - last_kill >= 1.0:
            _send(alive, signal.SIGKILL)
            last_kill = time.monotonic()
        alive = [p for p in alive if _alive(p)]
    return alive


def _send(procs: list[psutil.Process], sig: int) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.send_signal(sig)


def end_job(proc: subprocess.Popen[bytes], token: str,
            key: str = JOB_ENV) -> tuple[int, set[Entry]]:
    """Stop, then kill, every process of the job started as ``proc``; its exit code, and the
    ``/dev/shm`` files the stopped processes held."""
    frozen: set[int] = set()
    for _ in range(20):  # stop until no new process appears (a fork racing the first pass)
        procs = job_processes(token, proc.pid, key)
        new = [p for p in procs if p.pid not in frozen]
        if not new:
            break
        _send(new, signal.SIGSTOP)
        frozen.update(p.pid for p in new)
    held = held_by(frozen)
    procs = job_processes(token, proc.pid, key)
    _send(procs, signal.SIGKILL)
    rc = proc.wait()
    _wait_dead(procs)  # so that their mappings are gone
    return rc, held


def end_leftovers(token: str, known: Iterable[psutil.Process] = (),
                  grace_s: float = 5.0) -> tuple[int, set[Entry], list[psutil.Process]]:
    """Kill what is left of an ended job: processes carrying ``token`` and the ``known`` ones
    seen in its tree (a rank its launcher did not reap, a stopped one, one still dying). Returns
    how many were killed, the ``/dev/shm`` files they held, and those that could not be ended."""
    procs = job_processes(token, known=known)
    deadline = time.monotonic() + grace_s  # launchers tear down asynchronously: give them a moment
    while procs and time.monotonic() < deadline:
        time.sleep(0.1)
        procs = [p for p in procs if _alive(p)]
    if not procs:
        return 0, set(), []
    _send(procs, signal.SIGSTOP)
    held = held_by(p.pid for p in procs)
    _send(procs, signal.SIGKILL)
    stuck = _wait_dead(procs)
    return len(procs), held, stuck


def interrupted(name: str | None, case: str | None) -> dict[str, Any]:
    """``meta.json``'s fields of a run that signal ``name`` ended during ``case``."""
    from bench.store.kinds import now

    return {"status": "interrupted", "signal": name, "reason": f"interrupted by {name}",
            "interrupted_case": case, "finished": now()}


def end_meta(run_dir: Path, fields: dict[str, Any]) -> None:
    """``fields`` (how the run ended) into ``run_dir``'s ``meta.json``."""
    from bench.store.records import read_meta, write_meta

    write_meta(run_dir, read_meta(run_dir) | fields)


@functools.cache
def job_interrupt() -> JobInterrupt:
    """The process's one :class:`JobInterrupt` (made on first call)."""
    return JobInterrupt()


def arm_if_rank_of_users_job(argv: list[str], env: Mapping[str, str]) -> None:
    """A rank of ``commbench run`` or ``probe`` inside the user's own MPI job arms
    :func:`job_interrupt` (called first by :func:`bench.cli.main`: see there why)."""
    from bench.launch.launcher import WORKER_ENV, inside_mpi_job

    if argv[1:2] in (["run"], ["probe"]) and WORKER_ENV not in env and inside_mpi_job():
        job_interrupt()


class JobInterrupt:
    """Every rank of the user's own job (mpiexec, srun): SIGTERM or SIGHUP (a time limit, a
    cancel) end the rank with 128 + n, and on rank 0, once :attr:`run_dir` is set, first mark the
    run ``interrupted`` with the signal and the case in flight. The signals are blocked before MPI
    starts (so no thread MPI makes inherits them unblocked) and taken by a helper thread with
    ``sigwait``: handled even while the main thread sits inside an MPI call, where a Python
    handler would wait for the call to return."""

    SIGNALS = frozenset({signal.SIGTERM, signal.SIGHUP})

    def __init__(self) -> None:
        self.run_dir: Path | None = None  # set on rank 0 once the run directory exists
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)
        threading.Thread(target=self._wait, name="commbench-signals", daemon=True).start()

    def _wait(self) -> None:
        sig = signal.sigwait(self.SIGNALS)
        if self.run_dir is not None:
            with contextlib.suppress(Exception):  # the records are on disk whatever happens
                self._mark(self.run_dir, signal.Signals(sig).name)
        os._exit(128 + sig)

    @staticmethod
    def _mark(run_dir: Path, name: str) -> None:
        from bench.launch.inflight import take

        marker = take(run_dir)
        end_meta(run_dir, interrupted(name, marker.get("case") if marker else None))
        os.write(2, f"commbench: interrupted by {name}; records kept in {run_dir}\n".encode())
