"""Registries: extend commbench by registering, never by if/elif chains on names.

A registry is filled by decorators when its modules are imported and only read afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A name that no one registered; the message lists the valid names."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        def deco(item: T) -> T:
            return self.add(name, item)

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownName(
                f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        return list(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
