"""From two side specs (:mod:`bench.gate.sidespec`) to the sides ``commbench ab`` runs: a
worktree for each side that names a revision (this checkout's code for one that does not), the
dependency check where both sides share this interpreter, and each side's stack
(:func:`bench.gate.stack.stacks`), which refuses a side that cannot run, probed while each side's
code is checked (:func:`bench.gate.ab.check_origin`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path

from bench.gate.ab import AbError, Side, check_origin, git, quiet_flags, resolve, worktrees
from bench.gate.abdeps import mismatch
from bench.gate.sidespec import SideSpec
from bench.gate.stack import CODE_ROOT, stacks


def interpreter(spec: SideSpec) -> str:
    """The side's interpreter; a relative path that exists here made absolute (its runs start in
    its code's folder), but not resolved: a virtual environment's ``python`` is a link that must
    stay one. A bare name, or a path only the prefix knows (a container's), is kept as given."""
    if spec.python is None:
        return sys.executable
    path = Path(spec.python).expanduser()
    return str(path.absolute()) if "/" in spec.python and path.exists() else spec.python


@contextmanager
def prepared(specs: Mapping[str, SideSpec], out: Path) -> Iterator[list[Side]]:
    """The sides (name -> spec, in run order), ready to run; their worktrees are removed on leaving,
    whatever happens. :class:`AbError` (one line) when a side cannot run."""
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
        stacks(sides, lambda: checked(sides))
        yield sides


def checked(sides: list[Side]) -> None:
    """Each side imports commbench from its own code, and says what its ``commbench run`` takes."""
    for side in sides:
        check_origin(side)
        side.run_flags = quiet_flags(side)


def shared_environment(sides: list[Side]) -> str | None:
    """Where revisions share this interpreter (no side names another, none runs under a prefix):
    why their declared dependencies cannot both run here (:func:`bench.gate.abdeps.mismatch`),
    or None."""
    if any(s.python != sys.executable or s.prefix for s in sides) or not any(s.sha for s in sides):
        return None
    trees = {s.name.upper(): s.tree for s in sides if (s.tree / "pyproject.toml").is_file()}
    return mismatch(trees) if trees else None
