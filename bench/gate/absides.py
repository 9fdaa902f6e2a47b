"""From two side specs (:mod:`bench.gate.sidespec`) to the sides ``commbench ab`` runs: their
worktrees, the shared-dependency check, and each side's stack (:mod:`bench.gate.stack`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path

from bench.gate.ab import AbError, Side, check_sides, git, resolve, worktrees
from bench.gate.abdeps import mismatch
from bench.gate.sidespec import SideSpec
from bench.gate.stack import CODE_ROOT, stacks


def interpreter(spec: SideSpec) -> str:
    """The side's interpreter; a relative path that exists here made absolute (its runs start in
    its code's folder) but not resolved (a venv's ``python`` is a link that must stay one)."""
    if spec.python is None:
        return sys.executable
    path = Path(spec.python).expanduser()
    return str(path.absolute()) if "/" in spec.python and path.exists() else spec.python


@contextmanager
def prepared(specs: Mapping[str, SideSpec], out: Path) -> Iterator[list[Side]]:
    """The sides (name -> spec, in run order), ready to run; worktrees removed on leaving."""
    revs = {n: s.rev for n, s in specs.items() if s.rev}
    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel")) if revs else CODE_ROOT
    shas = {n: resolve(repo, r) for n, r in revs.items()}
    with worktrees(repo, shas) if shas else nullcontext({}) as trees:
        sides = [Side(n, s.rev or "", shas.get(n, ""), trees.get(n, CODE_ROOT), out / n,
                      env=s.variables, python=interpreter(s), prefix=s.prefix, spec=s.describe())
                 for n, s in specs.items()]
        why = shared_environment(sides)
        if why:
            raise AbError(why)
        stacks(sides, lambda: check_sides(sides))
        yield sides


def shared_environment(sides: list[Side]) -> str | None:
    """Where revisions share this interpreter: why their dependencies cannot both run here, or
    None."""
    if any(s.python != sys.executable or s.prefix for s in sides) or not any(s.sha for s in sides):
        return None
    trees = {s.name.upper(): s.tree for s in sides if (s.tree / "pyproject.toml").is_file()}
    return mismatch(trees) if trees else None
