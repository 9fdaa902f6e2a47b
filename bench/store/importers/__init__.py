"""Importers: other tools' results as commbench run directories (``samples_us`` the tool's
summary value, marked as such); each module registers one (discovered). docs/results.md, "Import"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.argtypes import CommbenchError
from kernels.registry import Registry


class ParseError(CommbenchError, ValueError):
    """Input that is not the tool's output, at ``line`` (1-based; 0 when no single line is)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(" ".join(message.splitlines()))  # always one line, whatever it quotes
        self.line = line

    def where(self, path: object) -> str:
        """``path:line: message``, as compilers print it."""
        return f"{path}:{self.line}: {self}" if self.line else f"{path}: {self}"


@dataclass(frozen=True)
class Options:
    world_size: int | None = None  # when the output does not say (OSU)
    ranks_per_node: int | None = None
    collective: str | None = None  # overrides what the log says (``--collective``)
    filename: str | None = None  # the input's name: the last hint at which collective ran


@dataclass(frozen=True)
class Imported:
    meta: dict[str, Any]  # extra meta.json fields (version, hosts, devices, settings)
    records: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)  # one line each, for stderr
    skipped: int = 0  # non-blank input lines that were neither table nor tool output


@dataclass(frozen=True)
class Importer:
    name: str
    summary: str
    parse: Callable[[str, Options], Imported]


IMPORTERS: Registry[Importer] = Registry("importer", ("bench.store.importers",))


def importer(name: str, summary: str) -> Callable[[Callable[[str, Options], Imported]],
                                                  Callable[[str, Options], Imported]]:
    def deco(fn: Callable[[str, Options], Imported]) -> Callable[[str, Options], Imported]:
        IMPORTERS.add(name, Importer(name, summary, fn))
        return fn

    return deco
