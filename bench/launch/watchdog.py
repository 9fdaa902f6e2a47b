"""Per-case deadline on every rank: a hung or dead peer ends the job with a named case.

A daemon thread checks the deadline of the case in flight; past it, it prints one line and calls
the job's ``abort`` with :data:`TIMEOUT_EXIT`: ``MPI_Abort`` for MPI jobs (mpi4py initialises
MPI with thread support, so a helper thread may), which makes mpiexec/srun tear the job down;
``os._exit`` for torch jobs, whose launcher ends the other ranks. Collective and training runs
share this watchdog.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

TIMEOUT_EXIT = 124  # the job's exit code when the watchdog aborts it (launchers pass it on)


class Watchdog:
    def __init__(self, rank: int, abort: Callable[[int], object], poll_s: float = 0.5) -> None:
        self._rank = rank
        self._abort = abort
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._label = ""
        self._timeout = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(poll_s,), daemon=True)
        self._thread.start()

    def arm(self, label: str, timeout_s: float) -> None:
        with self._lock:
            self._label, self._timeout = label, timeout_s
            self._deadline = time.monotonic() + timeout_s

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None

    def close(self) -> None:
        self._stop.set()

    def _loop(self, poll_s: float) -> None:
        while not self._stop.wait(poll_s):
            with self._lock:
                late = self._deadline is not None and time.monotonic() > self._deadline
                label, timeout = self._label, self._timeout
            if late:
                sys.stderr.write(
                    f"commbench: rank {self._rank}: case '{label}' exceeded "
                    f"case_timeout_s={timeout:g} (a rank hung or died); aborting the job\n")
                sys.stderr.flush()
                self._abort(TIMEOUT_EXIT)
                return
