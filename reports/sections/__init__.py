"""Report sections by name: each module registers a builder that turns the runs into a
template context; the page lists them in the order of ``reports.render.SECTION_MODULES``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.units import parse_size
from kernels.registry import Registry
from reports.data import ReportData


@dataclass(frozen=True)
class Options:
    max_panels: int = 3  # figures per section; the rest are listed by name
    max_subplots: int = 4  # world sizes per figure, evenly spread when there are more
    max_rows: int = 2000  # table rows written inline; the rest are counted
    latency_max_bytes: int = parse_size("64KiB")  # "small messages" for the latency figure


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    template: str  # under templates/sections/
    ctx: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[ReportData, Options], "Section | None"]
SECTIONS: Registry[Builder] = Registry("report section")


def section(name: str) -> Callable[[Builder], Builder]:
    return SECTIONS.register(name)
