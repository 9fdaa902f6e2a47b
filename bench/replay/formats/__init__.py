"""Trace formats ``commbench import`` turns into a replay scenario, one module each registering a
:class:`TraceFormat` (discovered): the files of one job read into each rank's calls, in order,
and the process groups they name; anything unreadable is a
:class:`~bench.replay.calls.TraceError` naming the file and the event."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.replay.calls import RankCall
from kernels.registry import Registry


@dataclass(frozen=True)
class Read:
    """What a format read: each rank's calls and the process groups the trace lists (global
    ranks; empty: only the world)."""

    by_rank: dict[int, list[RankCall]]
    world: int
    groups: list[tuple[int, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line each, for stderr


@dataclass(frozen=True)
class TraceFormat:
    name: str
    summary: str
    read: Callable[[Sequence[Path]], Read]


FORMATS: Registry[TraceFormat] = Registry("trace format", ("bench.replay.formats",))


def trace_format(name: str, summary: str) -> Callable[[Callable[[Sequence[Path]], Read]],
                                                      Callable[[Sequence[Path]], Read]]:
    def deco(fn: Callable[[Sequence[Path]], Read]) -> Callable[[Sequence[Path]], Read]:
        FORMATS.add(name, TraceFormat(name, summary, fn))
        return fn

    return deco
