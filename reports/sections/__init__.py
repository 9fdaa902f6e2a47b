"""Report sections by name: each module of this package (or of a plugin package), discovered,
registers a builder of a template context (None: nothing to show) and its place on the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.units import parse_size
from kernels.registry import Registry
from reports.data import ReportData, Run


@dataclass(frozen=True)
class Options:
    max_panels: int = 8  # figures per section (nccl-tests' 8 collectives); the rest are listed by name
    max_subplots: int = 4  # world sizes per figure, evenly spread when there are more
    max_rows: int = 2000  # table rows written inline; the rest are counted
    latency_max_bytes: int = parse_size("64KiB")  # "small messages" for the latency figure


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    template: str  # under templates/sections/ ("" when ``source`` is given)
    ctx: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the template's own text, for a section whose one file holds it (a plugin)


Builder = Callable[[ReportData, Options], "Section | None"]


@dataclass(frozen=True)
class Entry:
    order: int  # place on the page, lowest first
    build: Builder


SECTIONS: Registry[Entry] = Registry("report section", ("reports.sections",),
                                     order=lambda e: e.order)


def holds_any(data: ReportData, kinds: tuple[str, ...]) -> bool:
    """Whether the runs hold a record of one of ``kinds``, or no record at all."""
    return data.frame.empty or bool(data.frame["kind"].isin(kinds).any())


def section(name: str, order: int, reads: tuple[str, ...] = ()) -> Callable[[Builder], Builder]:
    """Register a builder at place ``order``; with ``reads`` (record kinds), it is only called
    when :func:`holds_any` of them, so a probe-only run has no Bandwidth placeholder."""
    def deco(fn: Builder) -> Builder:
        def build(data: ReportData, opts: Options) -> Section | None:
            return fn(data, opts) if not reads or holds_any(data, reads) else None

        SECTIONS.add(name, Entry(order, build))
        return fn

    return deco


def per_run(data: ReportData, id: str, title: str, template: str,
            ctx: Callable[[Run], dict[str, Any] | None]) -> Section | None:
    """A section of one context per run that has something to show; None when no run has."""
    runs = [c for c in map(ctx, data.runs) if c is not None]
    return Section(id, title, template, {"runs": runs}) if runs else None
