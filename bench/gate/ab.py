"""Paired A/B runs (``commbench ab``): each side's code run alternately, round after round, by
its own interpreter under its own prefix and variables; each run's records appended to its side's
run directory tagged with their ``round``. A signal is passed on to the run in flight (killed after
:data:`GRACE_S`), the sides marked ``interrupted`` and the worktrees removed (exit 128 + signal)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.argtypes import CommbenchError
from bench.gate.comparable import incomparable
from bench.gate.matched import STACK_FIELDS, mismatched, speed
from bench.gate.paired import ROUND
from bench.launch.signals import STOP_SIGNALS, SignalGuard, end_job
from bench.store.records import META, RESULTS, StoreError, read_meta, write_meta

SIDES = ("base", "head")
PACKAGES = ("bench", "kernels", "reports")
_MPI_MARKERS = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCALRANKID", "COMMBENCH_WORKER")
AB_JOB_ENV = "COMMBENCH_AB_RUN"  # a fresh token per run, in the environment of all its processes
GRACE_S = 30.0  # how long a run has to end its job after the signal is passed on


class AbError(CommbenchError):
    """A/B runs that cannot start or go on; one line, exit 2."""


class AbInterrupted(Exception):
    """A signal ended the A/B runs; ``where``: the run it stopped ('' before any)."""

    def __init__(self, signum: int, where: str = "") -> None:
        self.name = signal.Signals(signum).name
        super().__init__(self.name)
        self.signum = signum
        self.where = where

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@dataclass
class Side:
    name: str  # "base" or "head"
    rev: str  # as the user gave it ("" for this checkout's code)
    sha: str  # "" for this checkout's code
    tree: Path  # its worktree, or this checkout
    out: Path  # its run directory (rounds appended)
    env: dict[str, str] = field(default_factory=dict)  # extra environment of its runs
    path: tuple[Path, ...] = ()  # extra PYTHONPATH entries after the worktree
    seconds: list[float] = field(default_factory=list)
    run_flags: tuple[str, ...] = ()  # what its ``commbench run`` is given beyond the scenario's
    python: str = sys.executable  # the interpreter its runs use
    prefix: tuple[str, ...] = ()  # the command they start under
    spec: str = ""  # the side as the user gave it (bench.gate.sidespec.SideSpec.describe)
    stack: dict[str, Any] = field(default_factory=dict)  # its `commbench env` (bench.gate.stack)

    @property
    def label(self) -> str:
        return f"{self.name.upper()} {self.sha[:10]}" if self.sha else self.name.upper()

    def command(self, *args: str) -> list[str]:
        """``args`` given to the side's interpreter, under its prefix."""
        return [*self.prefix, self.python, *args]


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if res.returncode != 0:
        msg = (res.stderr.strip().splitlines() or ["failed"])[-1]
        raise AbError(f"git {' '.join(args)}: {msg}")
    return res.stdout.strip()


def resolve(repo: Path, rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except AbError:
        raise AbError(f"{rev!r} is not a commit of {repo}") from None


@contextmanager
def worktrees(repo: Path, shas: Mapping[str, str]) -> Iterator[dict[str, Path]]:
    """A detached worktree per side in a temporary directory, removed whatever happens."""
    tmp = Path(tempfile.mkdtemp(prefix="commbench-ab-"))
    made: list[Path] = []
    try:
        for name, sha in shas.items():
            git(repo, "worktree", "add", "--detach", "--quiet", str(tmp / name), sha)
            made.append(tmp / name)
        yield {name: tmp / name for name in shas}
    finally:
        for wt in made:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(wt)],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)


def side_env(side: Side) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_MARKERS)}
    env.update(side.env)
    # the side's code first; a PYTHONPATH the side sets (a plugin's folder) comes after it
    extra = [side.env["PYTHONPATH"]] if side.env.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (side.tree, *side.path, *extra))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _ask(side: Side, *args: str) -> subprocess.CompletedProcess[str]:
    """The side's interpreter run with ``args`` in its worktree, its output captured."""
    return subprocess.run(side.command(*args), capture_output=True, text=True, env=side_env(side),
                          cwd=side.tree)


def check_origin(side: Side) -> None:
    """The side's interpreter imports commbench from its worktree, not from this checkout."""
    code = "import importlib,sys;print('\\n'.join(importlib.import_module(p).__file__ for p in sys.argv[1:]))"
    res = _ask(side, "-c", code, *PACKAGES)
    if res.returncode != 0:
        raise AbError(f"{side.label}: cannot import commbench from its worktree: "
                      f"{(res.stderr.strip().splitlines() or ['?'])[-1]}")
    for pkg, where in zip(PACKAGES, res.stdout.split()):
        if not Path(where).resolve().is_relative_to(side.tree.resolve()):
            raise AbError(f"{side.label}: {pkg} is imported from {where}, not from its worktree")


def check_sides(sides: Sequence[Side]) -> None:
    """Each side imports commbench from its own code; its ``commbench run`` gets ``--no-report``
    where it has it (ab renders its own report)."""
    for side in sides:
        check_origin(side)
        res = _ask(side, "-m", "bench", "run", "--help")
        side.run_flags = ("--no-report",) if res.returncode == 0 and "--no-report" in res.stdout else ()


def run_once(side: Side, scenario: Path, rnd: int, rounds_dir: Path,
             guard: SignalGuard | None = None) -> float:
    """One ``commbench run`` of the side's code, its records appended with their round; seconds
    it took. A signal the guard sees ends it: :class:`AbInterrupted`."""
    out = rounds_dir / f"{side.name}-{rnd}"
    log = rounds_dir / f"{side.name}-{rnd}.log"
    token = uuid.uuid4().hex
    t0 = time.monotonic()
    with log.open("w") as fh:
        # a session of its own: the terminal's Ctrl-C reaches ab alone, which passes it on
        proc = subprocess.Popen(side.command("-m", "bench", "run", str(scenario), "--out",
                                             str(out), "--no-progress", *side.run_flags), stdout=fh,
                                stderr=subprocess.STDOUT,
                                env={**side_env(side), AB_JOB_ENV: token}, cwd=side.tree,
                                start_new_session=True)
        try:
            rc = _wait(proc, token, guard)
        except BaseException:  # the run must not outlive ab, whatever goes wrong here
            end_job(proc, token, AB_JOB_ENV)
            raise
    seconds = time.monotonic() - t0
    where = f"round {rnd}, {side.label}"
    if guard is not None and guard.signum is not None:
        raise AbInterrupted(guard.signum, where)
    if rc - 128 in STOP_SIGNALS:  # the run itself was interrupted (signalled directly)
        raise AbInterrupted(rc - 128, where)
    if not (out / RESULTS).is_file() or not append(out, side, rnd, seconds, rc):
        raise AbError(f"{side.label} round {rnd}: commbench run exited {rc} with no records "
                      f"(see {log})")
    return seconds


def _wait(proc: subprocess.Popen[bytes], token: str, guard: SignalGuard | None) -> int:
    """The run's exit code; on a signal, the run's once it has ended its job (or was killed)."""
    while True:
        if guard is not None and guard.signum is not None:
            proc.send_signal(guard.signum)  # it ends its job, marks its run, exits 128 + n
            with suppress(subprocess.TimeoutExpired):
                proc.wait(GRACE_S)
            return end_job(proc, token, AB_JOB_ENV)[0]  # and nothing of it is left
        try:
            return proc.wait(0.2)
        except subprocess.TimeoutExpired:
            continue


def mark_interrupted(out: Path, exc: AbInterrupted) -> list[str]:
    """Mark each side's ``meta.json`` under ``out`` interrupted (signal, run stopped); the sides
    marked."""
    marked = []
    for name in SIDES:
        if not (out / name / META).is_file():
            continue
        try:
            meta = read_meta(out / name)
        except StoreError:
            continue
        reason = f"interrupted by {exc.name}" + (f" during {exc.where}" if exc.where else "")
        meta.update(status="interrupted", signal=exc.name, reason=reason,
                    finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        write_meta(out / name, meta)
        marked.append(name)
    return marked


def append(run: Path, side: Side, rnd: int, seconds: float, rc: int) -> int:
    """The run's records appended to the side's, tagged with the round; how many."""
    side.out.mkdir(parents=True, exist_ok=True)
    n = 0
    with (side.out / RESULTS).open("a") as dst:
        for line in (run / RESULTS).read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash: the run's own loader skips it too
            rec[ROUND] = rnd
            dst.write(json.dumps(rec) + "\n")
            n += 1
    if n == 0:
        return 0
    try:
        meta = read_meta(side.out) if (side.out / META).is_file() else read_meta(run)
    except StoreError as e:
        raise AbError(str(e)) from None
    ab = meta.setdefault("ab", {"side": side.name, "spec": side.spec, "revision": side.rev,
                                "commit": side.sha, "env": side.env, "python": side.python,
                                "prefix": list(side.prefix), "stack": side.stack, "rounds": []})
    ab["rounds"].append({ROUND: rnd, "seconds": round(seconds, 3), "returncode": rc,
                         "run": str(run)})
    meta["run_id"] = side.name
    meta["status"] = "ok" if all(r["returncode"] == 0 for r in ab["rounds"]) else "failed"
    meta["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_meta(side.out, meta)
    return n


def run_rounds(sides: Sequence[Side], scenario: Path, rounds: int, rounds_dir: Path,
               say: Callable[[str], None], guard: SignalGuard | None = None,
               extra: int = 0, checked: bool = False) -> list[int]:
    """``rounds`` rounds of one run per side, the order rotating by one side per round so drift
    favours no side; with ``extra`` > 0, a round whose canaries disagree (:mod:`bench.gate.matched`)
    is set aside and run again, up to ``extra`` times. The rounds set aside."""
    rounds_dir.mkdir(parents=True, exist_ok=True)
    if not checked:
        check_sides(sides)
    aside: list[int] = []
    own = len(sides) == 2 and any(getattr(sides[0], f) != getattr(sides[1], f) for f in STACK_FIELDS)
    canaries: list[dict[int, float]] = [{} for _ in sides]
    rnd = 0
    while rnd - len(aside) < rounds and rnd < rounds + min(extra, len(aside)):
        rnd += 1
        k = (rnd - 1) % len(sides)
        for side in [*sides[k:], *sides[:k]]:
            if guard is not None and guard.signum is not None:
                raise AbInterrupted(guard.signum, f"round {rnd}, before {side.label}")
            s = run_once(side, scenario, rnd, rounds_dir, guard)
            side.seconds.append(s)
            say(f"# ab: round {rnd}/{rounds + len(aside)} {side.label}: {s:.1f} s")
        if rnd == 1 and len(sides) == 2:
            why = incomparable({x.label: rounds_dir / f"{x.name}-1" for x in sides})
            if why:
                raise AbError(why)
        if extra and len(sides) == 2:
            for seen, x in zip(canaries, sides):
                if v := speed(rounds_dir / f"{x.name}-{rnd}"):
                    seen[rnd] = v
            # all rounds again: for sides on their own stacks the usual ratio moves with each
            # round, so the rounds set aside are those the final decision sets aside
            now = mismatched(*canaries, own_stacks=own)
            new = [m for m in now if m.round not in aside]
            aside = [m.round for m in now]
            for m in new:
                say(f"# ab: {m.describe()}: the machine changed speed between the two runs; "
                    "round set aside" + (", one more run" if len(aside) <= extra else ""))
    return aside
