"""Whether two revisions can share this environment: the same declared dependencies, the
required ones satisfied here."""

from __future__ import annotations

import importlib
import importlib.metadata as md
from pathlib import Path
from types import ModuleType


def _toml() -> ModuleType:
    """tomllib (Python >= 3.11), else tomli where installed."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ValueError("reading pyproject.toml needs Python >= 3.11 (tomllib) or tomli")


def normalized(req: str, extra: str | None = None) -> str:
    """One requirement as a canonical string (name, extras, sorted specifiers, marker)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    r = Requirement(req)
    marker = str(r.marker) if r.marker else ""
    if extra is not None:
        marker = f'({marker}) and extra == "{extra}"' if marker else f'extra == "{extra}"'
    extras = f"[{','.join(sorted(r.extras))}]" if r.extras else ""
    spec = ",".join(sorted(str(s) for s in r.specifier))
    return f"{canonicalize_name(r.name)}{extras}{spec}" + (f"; {marker}" if marker else "")


def declared(tree: Path) -> set[str]:
    """The dependencies ``tree/pyproject.toml`` declares; ValueError (one line) when unreadable."""
    path = tree / "pyproject.toml"
    toml = _toml()
    try:
        project = toml.loads(path.read_text()).get("project", {})
        out = {normalized(d) for d in project.get("dependencies", [])}
        for extra, deps in project.get("optional-dependencies", {}).items():
            out |= {normalized(d, extra) for d in deps}
    except (OSError, toml.TOMLDecodeError, ValueError) as e:
        raise ValueError(f"{path}: cannot read its dependencies: {e}") from None
    return out


def unsatisfied(deps: set[str]) -> list[str]:
    """The required (not optional) dependencies this environment lacks or has at another version."""
    from packaging.requirements import Requirement

    out = []
    for d in sorted(deps):
        r = Requirement(d)
        if r.marker is not None and not r.marker.evaluate({"extra": ""}):
            continue  # an extra's, or another platform's
        try:
            have = md.version(r.name)
        except md.PackageNotFoundError:
            out.append(f"{r.name} (not installed)")
            continue
        if not r.specifier.contains(have, prereleases=True):
            out.append(f"{r.name} {have} (needs {r.specifier})")
    return out


def _diff(mine: set[str], theirs: set[str]) -> str:
    parts = [f"+{d}" for d in sorted(mine - theirs)] + [f"-{d}" for d in sorted(theirs - mine)]
    return ", ".join(parts[:4]) + (f", ... ({len(parts)} in all)" if len(parts) > 4 else "")


def mismatch(trees: dict[str, Path]) -> str | None:
    """Why the worktrees (label -> path) cannot share this environment, or None when they can."""
    deps = {label: declared(t) for label, t in trees.items()}
    labels = list(deps)
    first = labels[0]
    for other in labels[1:]:
        if deps[other] != deps[first]:
            return (f"{other} declares other dependencies than {first} ({_diff(deps[other], deps[first])}"
                    "): run each side in an environment of its own (--base-python, --head-python)")
    missing = unsatisfied(deps[first])
    if missing:
        return (f"this environment does not satisfy {' and '.join(labels)}'s dependencies: "
                f"{', '.join(missing)}")
    return None
