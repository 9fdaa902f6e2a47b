"""What each side of ``commbench ab`` runs on (its ``commbench env``, run as its rounds run but
from this checkout's code, so every revision is read by the same probe), and what differed
between the two sides."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.gate.ab import AbError, Side, side_env

CODE_ROOT = Path(__file__).resolve().parents[2]  # the checkout this ab runs from
COMPARED = ("python", "mpi", "driver", "cupy", "nccl", "torch", "transports")  # env sections
LAUNCHER = ("listening", "collective launcher")  # the mpiexec a self-launched run would use
PROBE_TIMEOUT_S = 600.0  # under a prefix (srun, a container) the probe may wait to start
# commbench env's probes, but torch's versions read from its distribution (and the NCCL wheel it
# loads) rather than by importing torch, which takes seconds; printed as one line, since a prefix
# (srun) may run it once per task
_PROBE = """
import json, importlib.metadata as md
from bench.commands.env import PROBES, collect
def torch():
    out = {}
    for dist in ("torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out or {"torch": "not installed"}
print(json.dumps(collect({**PROBES, "torch": torch}), default=str))
"""


@dataclass(frozen=True)
class Difference:
    what: str  # "variable NCCL_ALGO", "mpi library", "revision", ...
    base: str
    head: str


def stacks(sides: Sequence[Side], meanwhile: Callable[[], None] = lambda: None) -> None:
    """Each side's ``commbench env`` into ``side.stack``, ``meanwhile`` run while the probes do;
    :class:`AbError` naming a side that cannot run (before any error of ``meanwhile``)."""
    procs = started(sides)
    try:
        meanwhile()
    except AbError:
        finish(sides, procs)
        raise
    finish(sides, procs)


def started(sides: Sequence[Side]) -> list[subprocess.Popen[str]]:
    procs: list[subprocess.Popen[str]] = []
    for side in sides:
        probe = replace(side, tree=CODE_ROOT, path=())
        try:
            procs.append(subprocess.Popen(side.command("-c", _PROBE), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, cwd=CODE_ROOT,
                                          env=side_env(probe)))
        except OSError as e:
            for p in procs:
                p.kill()
            raise AbError(f"{side.label} ({side.spec}) cannot run: {shlex.join(side.command())}: "
                          f"{e.strerror or e}") from None
    return procs


def finish(sides: Sequence[Side], procs: Sequence[subprocess.Popen[str]]) -> None:
    for side, proc in zip(sides, procs):
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        side.stack = parsed(out) if proc.returncode == 0 else {}
        if not side.stack:
            last = (err.strip().splitlines() or [f"exit {proc.returncode}, no output"])[-1]
            for p in procs:
                p.kill()
            raise AbError(f"{side.label} ({side.spec}) cannot run: its commbench env failed "
                          f"({shlex.join(side.command('-c', '...'))}): {last}")


def parsed(stdout: str) -> dict[str, Any]:
    """The first line of ``stdout`` that is the probe's object ({} when none is)."""
    for line in stdout.splitlines():
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "python" in data:
            return data
    return {}


def facts(stack: dict[str, Any]) -> dict[str, str]:
    """The compared facts of a stack, flat: ``"mpi library" -> "MPICH Version: 5.0.2"``."""
    out = {}
    for section in COMPARED:
        for key, value in (stack.get(section) or {}).items():
            name = key if key == section or section == "python" else f"{section} {key}"
            text = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
            out[name] = " ".join(text.split())  # MPI's padded version strings
    launcher = (stack.get(LAUNCHER[0]) or {}).get(LAUNCHER[1])
    if launcher is not None:
        out["mpiexec"] = str(launcher)
    return out


def _effective(side: Side, name: str) -> str | None:
    """The variable's value in the side's runs: its own setting, else what ab inherited."""
    return side.env.get(name, os.environ.get(name))


def _variable(side: Side, name: str) -> str:
    if name in side.env:
        return side.env[name]
    return f"{os.environ[name]} (inherited)" if name in os.environ else "(not set)"


def differences(base: Side, head: Side) -> list[Difference]:
    """What tells the sides apart: revision, variables, interpreter, prefix, then stack facts."""
    out = []
    if base.sha != head.sha:
        out.append(Difference("revision", *(f"{s.rev} ({s.sha[:10]})" if s.sha else
                                            "this checkout" for s in (base, head))))
    for name in sorted(set(base.env) | set(head.env)):
        if _effective(base, name) != _effective(head, name):
            out.append(Difference(f"variable {name}", _variable(base, name), _variable(head, name)))
    if base.python != head.python:
        out.append(Difference("interpreter", base.python, head.python))
    if base.prefix != head.prefix:
        out.append(Difference("prefix", *(shlex.join(s.prefix) or "(none)" for s in (base, head))))
    fb, fh = facts(base.stack), facts(head.stack)
    out += [Difference(k, fb.get(k, "(absent)"), fh.get(k, "(absent)"))
            for k in dict.fromkeys([*fb, *fh]) if fb.get(k) != fh.get(k)]
    return out


def describe(diffs: Sequence[Difference]) -> list[str]:
    """The differences as text lines (ab's stdout)."""
    if not diffs:
        return ["# sides: nothing tells them apart (an A/A run: a key called slower is a false "
                "alarm)"]
    return [f"# differs: {d.what}: BASE {d.base} | HEAD {d.head}" for d in diffs]
