"""How an emulated send waits for its delay (a clock that paces, never measures). It sleeps, because
emulated ranks oversubscribe the cores and a spinning rank would take a peer's; the timer slack is
set to 1 µs and the last ``lead_s`` spun, so the sleep's wake-up latency goes to the spin."""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

PR_SET_TIMERSLACK = 29  # linux/prctl.h


class Waiter(Protocol):
    def mark(self) -> float:
        """A point in time: the start of a step."""
        ...

    def until(self, mark: float, offset_s: float) -> None:
        """Return once ``offset_s`` seconds have passed since ``mark``."""
        ...

    def until_done(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` is true (it drives the transport's progress when called)."""
        ...


def set_timer_slack(ns: int) -> bool:
    """This process's timer slack (how late the kernel may wake a sleeper); False where it
    cannot be set (not Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0
    return False


@dataclass
class SleepWaiter:
    """Sleep until ``lead_s`` before the deadline, then spin to it."""

    lead_s: float = 30e-6
    poll_s: float = 20e-6
    slack_ns: int = 1000

    def __post_init__(self) -> None:
        set_timer_slack(self.slack_ns)

    def mark(self) -> float:
        return time.perf_counter()

    def until(self, mark: float, offset_s: float) -> None:
        deadline, clock = mark + offset_s, time.perf_counter
        rest = deadline - clock() - self.lead_s
        if rest > 0:
            time.sleep(rest)
        while clock() < deadline:
            pass

    def until_done(self, done: Callable[[], bool]) -> None:
        while not done():
            time.sleep(self.poll_s)

