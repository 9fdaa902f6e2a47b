"""Registries: extend commbench by registering, never by if/elif chains on names.

A registry is filled by its entries' own files. One that names ``packages`` discovers them: on
first read it imports every module of those packages, then of each package named in
``COMMBENCH_PLUGINS`` (your own extensions, outside this tree), so adding an entry is adding a
file. Entries that need torch, MPI or CuPy declare the module to import on first use, so
discovery imports none of them.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

PLUGINS_ENV = "COMMBENCH_PLUGINS"  # comma-separated packages of extra algorithms, transports, ...


class UnknownName(KeyError):
    """A name that no one registered; the message lists the valid names."""

    def __str__(self) -> str:
        return str(self.args[0])


def plugins() -> list[str]:
    """The packages named in ``COMMBENCH_PLUGINS``."""
    return [p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(",") if p.strip()]


def discover(package: str) -> list[str]:
    """Import ``package`` and every module under it (registering what they declare); their
    names. ``"pkg.*"``: only the packages directly under ``pkg``, each declaring itself in its
    ``__init__`` (nothing else of them is imported)."""
    if package.endswith(".*"):
        top = importlib.import_module(package[:-2])
        return [importlib.import_module(m.name).__name__
                for m in pkgutil.iter_modules(top.__path__, top.__name__ + ".") if m.ispkg]
    pkg = importlib.import_module(package)
    out = [pkg.__name__]
    for mod in pkgutil.walk_packages(getattr(pkg, "__path__", []), pkg.__name__ + "."):
        importlib.import_module(mod.name)
        out.append(mod.name)
    return out


def lazy(target: str) -> Any:
    """The attribute named by ``"module:attribute"``, its module imported now."""
    mod, _, attr = target.partition(":")
    return getattr(importlib.import_module(mod), attr)


class Registry(Generic[T]):
    """Names to entries. ``packages``: discovered on first read (see the module docstring);
    ``order``: a key on entries that orders :meth:`names` (else the order of registration)."""

    def __init__(self, kind: str, packages: tuple[str, ...] = (),
                 order: Callable[[T], Any] | None = None) -> None:
        self.kind = kind
        self._packages = packages
        self._order = order
        self._loaded = not packages
        self._items: dict[str, T] = {}

    def _load(self) -> dict[str, T]:
        if not self._loaded:
            self._loaded = True  # first: a module being discovered may read the registry
            for pkg in (*self._packages, *plugins()):
                discover(pkg)
        return self._items

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._load()[name]
        except KeyError:
            raise UnknownName(
                f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())}"
            ) from None

    def registered(self, name: str) -> T | None:
        """The entry ``name`` if its file has registered it already; nothing is discovered."""
        return self._items.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def names(self) -> list[str]:
        items = self._load()
        if self._order is None:
            return list(items)
        order = self._order
        return sorted(items, key=lambda n: order(items[n]))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
