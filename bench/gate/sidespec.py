"""What one side of ``commbench ab`` runs: a revision, environment variables, an interpreter and
a command prefix, written as parts ``KIND:VALUE`` joined by ``+`` (``rev:v1.2+env:NCCL_ALGO=Ring``;
a bare word is a revision, ``.`` no part). docs/gate.md, "Sides"."""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.argtypes import CommbenchError

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ITEM_SPLIT = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_]*=)")  # a comma that starts NAME=
_QUOTED = re.compile(r"""^(['"])(.*)\1$""", re.S)


class SpecError(CommbenchError, ValueError):
    """A side that cannot be read; one line."""


@dataclass(frozen=True)
class SideSpec:
    rev: str | None = None  # None: this checkout's code as it is
    env: tuple[tuple[str, str], ...] = ()  # variables set for its runs, in the order given
    python: str | None = None  # None: this interpreter
    prefix: tuple[str, ...] = ()  # the command its runs are started under

    @property
    def variables(self) -> dict[str, str]:
        """The variables it sets (a later setting of a name wins)."""
        return dict(self.env)

    def plus(self, other: SideSpec) -> SideSpec:
        """Both sets of parts; two revisions, interpreters or prefixes are refused."""
        for f in ("rev", "python", "prefix"):
            if getattr(self, f) and getattr(other, f):
                raise SpecError(f"two {f} parts ({self.part(f)} and {other.part(f)}): give one")
        return SideSpec(self.rev or other.rev, self.env + other.env, self.python or other.python,
                        self.prefix or other.prefix)

    def part(self, f: str) -> str:
        if f == "prefix":
            return f"prefix:{shlex.join(self.prefix)}"
        if f == "env":
            return "env:" + ",".join(f"{k}={v}" for k, v in self.variables.items())
        return f"{f}:{getattr(self, f)}"

    def describe(self) -> str:
        """The side in the spelling it can be given back in (``.`` when it has no part)."""
        parts = [self.part(f) for f in ("rev", "env", "python", "prefix") if getattr(self, f)]
        return "+".join(parts) or "."


def _env(text: str) -> SideSpec:
    items = [x for x in _ITEM_SPLIT.split(text) if x]
    if not items:
        raise SpecError("env: expects NAME=VALUE[,NAME=VALUE...]")
    return SideSpec(env=tuple(_assignment(x, f"env:{text}") for x in items))


def _assignment(item: str, where: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not NAME.fullmatch(name):
        raise SpecError(f"{where}: {item!r} is not NAME=VALUE")
    return name, value


def _env_file(text: str) -> SideSpec:
    """``NAME=VALUE`` lines (``export`` before, ``#`` comments, blank lines and one pair of
    quotes around a value allowed; nothing is expanded)."""
    path = Path(text).expanduser()
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"env-file:{text}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    env = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, value = _assignment(line.removeprefix("export ").lstrip(), f"{text}, line {n}")
        m = _QUOTED.match(value)
        env.append((name, m.group(2) if m else value))
    return SideSpec(env=tuple(env))


def _python(text: str) -> SideSpec:
    if not text.strip():
        raise SpecError("python: expects an interpreter (e.g. /path/to/venv/bin/python)")
    return SideSpec(python=text)


def _prefix(text: str) -> SideSpec:
    try:
        words = tuple(shlex.split(text))
    except ValueError as e:
        raise SpecError(f"prefix:{text}: {e}") from None
    if not words:
        raise SpecError("prefix: expects a command (e.g. 'srun --mpi=pmix')")
    return SideSpec(prefix=words)


def _rev(text: str) -> SideSpec:
    if not text.strip() or text.startswith("-"):
        raise SpecError(f"rev:{text}: expects a revision (branch, tag, commit)")
    return SideSpec(rev=text)


PARTS: Mapping[str, Callable[[str], SideSpec]] = {
    "rev": _rev, "env": _env, "env-file": _env_file, "python": _python, "prefix": _prefix}
PART_HELP: Mapping[str, tuple[str, str]] = {  # kind -> (metavar, help)
    "rev": ("REV", "revision of this repository whose code it runs (default: this checkout as is)"),
    "env": ("K=V[,K=V]", "environment variables set for its runs (repeatable)"),
    "env-file": ("FILE", "NAME=VALUE lines, as --*-env (repeatable)"),
    "python": ("PATH", "interpreter of another environment (another MPI, torch or NCCL)"),
    "prefix": ("CMD", "command its runs start under, e.g. 'srun --mpi=pmix' or a container runner"),
}
_JOIN = re.compile(r"\+(?=(?:" + "|".join(re.escape(k) for k in PARTS) + r"):)")


def parse(text: str) -> SideSpec:
    """A positional side: ``KIND:VALUE`` parts joined by ``+``, a bare revision, or ``.``."""
    if text == ".":
        return SideSpec()
    kind = text.split(":", 1)[0]
    if kind not in PARTS:
        return _rev(text)  # today's spelling: `commbench ab main HEAD ...`
    return combine(PARTS[k](v) for k, _, v in (p.partition(":") for p in _JOIN.split(text)))


def combine(parts: Iterable[SideSpec]) -> SideSpec:
    return functools.reduce(SideSpec.plus, parts, SideSpec())

