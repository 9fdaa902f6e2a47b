"""Paired A/B runs between two git revisions (``commbench ab``): worktrees of BASE and HEAD in a
temporary directory, then the scenario run alternately by each, round after round.

Each run is a full ``commbench run`` of that worktree's code (``python -m bench`` with
``PYTHONPATH`` set to the worktree, in this environment). Within a round the order alternates
(BASE, HEAD, then HEAD, BASE in the next round), so a machine that drifts one way over the job
favours neither side. A run's records are appended to its side's run directory tagged with
``round`` (:data:`bench.compare.paired.ROUND`); its own directory stays under ``rounds/``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.compare.paired import ROUND
from bench.records import META, RESULTS, StoreError, read_meta, write_meta

SIDES = ("base", "head")
PACKAGES = ("bench", "kernels", "reports")
_MPI_MARKERS = ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCALRANKID", "COMMBENCH_WORKER")


class AbError(Exception):
    """A/B runs that cannot start or go on; one line, exit 2."""


@dataclass
class Side:
    name: str  # "base" or "head"
    rev: str  # as the user gave it
    sha: str
    tree: Path  # its worktree
    out: Path  # its run directory (rounds appended)
    env: dict[str, str] = field(default_factory=dict)  # extra environment of its runs
    path: tuple[Path, ...] = ()  # extra PYTHONPATH entries after the worktree
    seconds: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name.upper()} {self.sha[:10]}"


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
    """A detached worktree per side in a temporary directory, removed (with git's record of it)
    whatever happens."""
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
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (side.tree, *side.path))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(side.env)
    return env


def check_origin(side: Side) -> None:
    """The side's interpreter imports commbench from its worktree, not from this checkout."""
    code = "import importlib,sys;print('\\n'.join(importlib.import_module(p).__file__ for p in sys.argv[1:]))"
    res = subprocess.run([sys.executable, "-c", code, *PACKAGES], capture_output=True, text=True,
                         env=side_env(side), cwd=side.tree)
    if res.returncode != 0:
        raise AbError(f"{side.label}: cannot import commbench from its worktree: "
                      f"{(res.stderr.strip().splitlines() or ['?'])[-1]}")
    for pkg, where in zip(PACKAGES, res.stdout.split()):
        if not Path(where).resolve().is_relative_to(side.tree.resolve()):
            raise AbError(f"{side.label}: {pkg} is imported from {where}, not from its worktree")


def run_once(side: Side, scenario: Path, rnd: int, rounds_dir: Path) -> float:
    """One full ``commbench run`` of the side's code; its records appended to the side's run
    directory with their round. Seconds it took."""
    out = rounds_dir / f"{side.name}-{rnd}"
    log = rounds_dir / f"{side.name}-{rnd}.log"
    t0 = time.monotonic()
    with log.open("w") as fh:
        rc = subprocess.run([sys.executable, "-m", "bench", "run", str(scenario), "--out", str(out),
                             "--no-progress"], stdout=fh, stderr=subprocess.STDOUT,
                            env=side_env(side), cwd=side.tree).returncode
    seconds = time.monotonic() - t0
    if rc == 130:
        raise KeyboardInterrupt
    if not (out / RESULTS).is_file():
        raise AbError(f"{side.label} round {rnd}: commbench run exited {rc} with no records "
                      f"(see {log})")
    if not append(out, side, rnd, seconds, rc):
        raise AbError(f"{side.label} round {rnd}: commbench run exited {rc} with no records "
                      f"(see {log})")
    return seconds


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
    ab = meta.setdefault("ab", {"side": side.name, "revision": side.rev, "commit": side.sha,
                                "env": side.env, "rounds": []})
    ab["rounds"].append({ROUND: rnd, "seconds": round(seconds, 3), "returncode": rc,
                         "run": str(run)})
    meta["run_id"] = side.name
    meta["status"] = "ok" if all(r["returncode"] == 0 for r in ab["rounds"]) else "failed"
    meta["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_meta(side.out, meta)
    return n


def run_rounds(sides: Sequence[Side], scenario: Path, rounds: int, rounds_dir: Path,
               say: Callable[[str], None]) -> None:
    """``rounds`` rounds of one run per side; the order rotates by one side per round (two sides:
    BASE, HEAD, then HEAD, BASE), so drift over the job favours no side."""
    rounds_dir.mkdir(parents=True, exist_ok=True)
    for side in sides:
        check_origin(side)
    for rnd in range(1, rounds + 1):
        k = (rnd - 1) % len(sides)
        for side in [*sides[k:], *sides[:k]]:
            s = run_once(side, scenario, rnd, rounds_dir)
            side.seconds.append(s)
            say(f"# ab: round {rnd}/{rounds} {side.label}: {s:.1f} s")
