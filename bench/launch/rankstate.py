"""Where each rank is: a slot per rank, ``RUN/ranks/<rank>.json``, for naming a hang
(docs/failures.md#which-rank-where). The main thread keeps :class:`Where` current with attribute
stores only, so the timed loop pays nanoseconds; the watchdog's thread writes the slot with a beat
that only a live, running rank advances."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.launch.inflight import read_json, write_json

SLOTS = "ranks"  # RUN/ranks/<world rank>.json


@dataclass
class Where:
    """What this rank is doing, as the main thread last said (mutable: written by the main
    thread, read by the watchdog's)."""

    plan: Any = None  # the plan being run; one with ``trace`` and ``at`` names its step
    algorithm: str = ""
    world_ranks: tuple[int, ...] = ()  # the plan's communicator ranks as world ranks

    def enter(self, plan: Any, algorithm: str, world_ranks: tuple[int, ...]) -> None:
        self.plan, self.algorithm, self.world_ranks = plan, algorithm, world_ranks

    def leave(self) -> None:
        self.plan = None

    def state(self) -> dict[str, Any]:
        """The step this rank is in and the world ranks it waits for (``{}`` outside a plan;
        ``step`` absent between a schedule's iterations, and in a vendor call, whose plan keeps
        no step index)."""
        plan = self.plan
        if plan is None:
            return {}
        trace, at = getattr(plan, "trace", None), getattr(plan, "at", -1)
        out: dict[str, Any] = {"algorithm": self.algorithm, "vendor": trace is None}
        if trace is None or not 0 <= at < len(trace):
            return out
        step, recvs, sends = trace[at]
        world = self.world_ranks
        out.update(step=step, steps=plan.nsteps, recv_from=[world[p] for p in recvs],
                   send_to=[world[p] for p in sends])
        return out


@dataclass
class Slots:
    """This rank's slot, and every rank's as read back."""

    run_dir: Path
    rank: int
    token: str
    host: str = field(default_factory=socket.gethostname)
    _made: bool = field(default=False, init=False, repr=False)

    @property
    def folder(self) -> Path:
        return self.run_dir / SLOTS

    def write(self, beat: int, case: str, where: Where) -> None:
        """This rank's slot, replaced atomically (a reader never sees half of it)."""
        if not self._made:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._made = True
        write_json(self.folder / f"{self.rank}.json",
                   {"rank": self.rank, "host": self.host, "pid": os.getpid(), "token": self.token,
                    "beat": beat, "case": case, **where.state()}, self.folder / f"{self.rank}.tmp")

    def read(self, world_size: int) -> dict[int, dict[str, Any]]:
        """Every rank's slot of this job (a missing, unreadable or earlier job's slot: absent)."""
        slots = {r: read_json(self.folder / f"{r}.json") for r in range(world_size)}
        return {r: s for r, s in slots.items() if s is not None and s.get("token") == self.token}

    def remove(self) -> None:
        """This rank's slot (a clean end); the folder once empty."""
        (self.folder / f"{self.rank}.json").unlink(missing_ok=True)
        (self.folder / f"{self.rank}.tmp").unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # only once every rank has removed its own
            self.folder.rmdir()


def clear(run_dir: Path) -> None:
    """The slots a previous job left (before a job starts)."""
    shutil.rmtree(run_dir / SLOTS, ignore_errors=True)
