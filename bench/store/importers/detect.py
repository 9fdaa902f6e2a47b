"""Which collective a log is of, strongest evidence first: ``--collective``, the tool's own
words, the command line, the table itself, the file's name; never a default."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from bench.store.importers import ParseError
from kernels.collective import names, resolve
from kernels.registry import UnknownName

NCCL_PROGRAM = re.compile(r"\b([A-Za-z][A-Za-z_]{0,40}?)_perf(?:_mpi)?\b")
OSU_PROGRAM = re.compile(r"\bosu_(?:(xccl|nccl|rccl|mpi)_)?([A-Za-z_]{1,40})")


@dataclass(frozen=True)
class Hint:
    name: str  # as the log spells it: all_gather, allgather, Bcast, All-to-All
    source: str  # where it was read, for messages
    line: int = 0
    firm: bool = False  # the user's or the tool's own word: naming an unknown collective is an error
    candidates: tuple[str, ...] = ()  # when it narrows the choice without making it


def canonical(name: str) -> str | None:
    """The registry's name for ``name`` (any alias, any case), or None."""
    key = re.sub(r"[\s-]+", "", name).lower()
    try:
        return resolve(key).name
    except UnknownName:
        return None


@functools.cache
def _spellings() -> re.Pattern[str]:
    words = {w for n in names() for c in [resolve(n)] for w in (c.name, *c.aliases)}
    alt = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])({alt})(?![a-z0-9])")


def from_filename(filename: str | None) -> list[Hint]:
    """The collective a file's name spells, when it spells exactly one."""
    if not filename:
        return []
    stem = PurePath(filename).name.lower()
    found = {canonical(m.group(1)) for m in _spellings().finditer(stem)}
    found.discard(None)
    return [Hint(found.pop() or "", "the file name")] if len(found) == 1 else []


def from_command(body: str, line: int) -> Hint | None:
    """An nccl-tests or OSU program named on a command line."""
    if m := NCCL_PROGRAM.search(body):
        return Hint(m.group(1), "the command line", line)
    if m := OSU_PROGRAM.search(body):
        return Hint(m.group(2), "the command line", line)
    return None


def choose(hints: Sequence[Hint], override: str | None, line: int) -> str:
    """The collective the strongest hint names (the override first); an unknown name is passed
    over unless the hint is firm."""
    if override:
        hints = [Hint(override, "--collective", firm=True), *hints]
    for h in hints:
        if name := canonical(h.name):
            return name
        if h.firm:
            raise ParseError(h.line, f"{h.source} names {h.name!r}, not a collective commbench "
                                     f"knows ({', '.join(names())}); pass --collective NAME to "
                                     "import it as one of those")
    narrowed = next((f"; {h.source} fit {' or '.join(h.candidates)}" for h in hints if h.candidates),
                    "")
    raise ParseError(line, "cannot tell which collective this table measured (no 'Collective "
                           "test starting' line, command line, telling column header or file "
                           f"name{narrowed}); pass --collective NAME ({', '.join(names())})")


def from_table(*, has_redop: bool, has_root: bool, modern: bool, redops: set[str],
               roots: set[int], ratios: set[int], world: int) -> Hint | None:
    """nccl-tests' collective from its table. ``ratios``: size / (count * word size) over rows;
    ``modern``: the header has ``#wrong`` (every test prints ``redop`` and ``root`` then)."""
    if not modern and has_root:  # old per-test headers: broadcast (root) and reduce (redop, root)
        return Hint("reduce" if has_redop else "broadcast", "the column header")
    reduces = bool(redops) and "none" not in redops if has_redop else None
    rooted = bool(roots) and min(roots) >= 0 if has_root else False
    whole, split = ratios == {1}, world > 1 and ratios == {world}
    if reduces is None or not (whole or split):
        return None
    if rooted:  # split and rooted: gather or scatter, not commbench's
        guess = ("reduce" if reduces else "broadcast") if whole else None
    elif reduces:
        guess = "all_reduce" if whole else "reduce_scatter"
    elif split:  # all_gather and alltoall print alike: the user must say
        return Hint("", "the table's columns", candidates=("all_gather", "alltoall"))
    else:
        guess = "sendrecv" if modern else None
    return Hint(guess, "the table's columns") if guess else None
