"""Per-case deadline on every rank: a hung or dead peer ends the job with a named case.

Past the deadline a daemon thread calls the job's ``abort`` with :data:`TIMEOUT_EXIT`
(``MPI_Abort`` for MPI jobs; ``os._exit`` for torch jobs, whose launcher ends the others). With
:class:`~bench.launch.rankstate.Slots` it also writes this rank's slot every poll and first
explains the hang (:mod:`bench.launch.forensics`; docs/failures.md#which-rank-where)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.launch import forensics, inflight
from bench.launch.rankstate import Slots, Where

TIMEOUT_EXIT = 124  # the job's exit code when the watchdog aborts it (launchers pass it on)
# polls between the two readings of the slots: a live rank beats meanwhile (a few, so that a
# rank whose thread waits long for a core, on a host its ranks oversubscribe, still does)
SETTLE_POLLS = 6
GRACE_POLLS = 20  # polls a rank that did not explain the hang waits for the one that did


class Watchdog:
    def __init__(self, rank: int, abort: Callable[[int], object], poll_s: float = 0.5,
                 slots: Slots | None = None, world_size: int = 1,
                 on_hang: Callable[[forensics.Hang], None] | None = None,
                 marker: Path | None = None) -> None:
        self._rank = rank
        self._abort = abort
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._label = ""
        self._timeout = 0.0
        self._stop = threading.Event()
        self._slots, self._world, self._on_hang = slots, world_size, on_hang
        self._marker = marker  # the run directory whose in-flight marker this rank writes
        self._beat, self._poll = 0, poll_s
        self.where = Where()  # the main thread keeps it current (the harness)
        self._thread = threading.Thread(target=self._loop, args=(poll_s,), daemon=True)
        self._thread.start()

    def arm(self, label: str, timeout_s: float) -> None:
        with self._lock:
            self._label, self._timeout = label, timeout_s
            self._deadline = time.monotonic() + timeout_s

    def arm_case(self, label: str, timeout_s: float, **extra: Any) -> None:
        """:meth:`arm`, first naming the case in the in-flight marker (the marker's rank), with
        ``extra`` fields (``world_size`` the job's unless given)."""
        if self._marker is not None:
            extra.setdefault("world_size", self._world)
            inflight.mark(self._marker, label, timeout_s, **extra)
        self.arm(label, timeout_s)

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None
            self.where.leave()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2 * self._poll)  # its last write done, unless it is explaining a hang

    def _write(self) -> None:
        if self._slots is not None:
            self._beat += 1
            with self._lock:
                case = self._label if self._deadline is not None else ""
            # a full or vanished run directory must not end the rank
            with contextlib.suppress(OSError):
                self._slots.write(self._beat, case, self.where)

    def _loop(self, poll_s: float) -> None:
        while True:
            self._write()
            if self._stop.wait(poll_s):
                return
            with self._lock:
                late = self._deadline is not None and time.monotonic() > self._deadline
                label, timeout = self._label, self._timeout
            if late:
                self._fire(label, timeout, poll_s)
                return

    def _fire(self, label: str, timeout: float, poll_s: float) -> None:
        head = f"exceeded case_timeout_s={timeout:g}"
        line = f"case '{label}' {head} (a rank hung or died)"
        slots = self._slots
        if slots is not None:
            before = slots.read(self._world)
            self._beating(SETTLE_POLLS, poll_s)
            hang = forensics.explain(label, head, before, slots.read(self._world), self._world)
            if not forensics.claim(slots.run_dir, hang, self._rank):
                self._beating(GRACE_POLLS, poll_s)  # the rank that explained it aborts the job
                self._abort(TIMEOUT_EXIT)
                return
            line = hang.line
            if self._on_hang is not None:
                try:
                    self._on_hang(hang)
                except Exception as e:  # the line below still says it
                    sys.stderr.write(f"commbench: rank {self._rank}: hang not recorded: {e}\n")
        sys.stderr.write(f"commbench: rank {self._rank}: {line}; aborting the job\n")
        sys.stderr.flush()
        self._abort(TIMEOUT_EXIT)

    def _beating(self, polls: int, poll_s: float) -> None:
        for _ in range(polls):
            time.sleep(poll_s)
            self._write()
