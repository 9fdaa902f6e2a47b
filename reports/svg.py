"""Matplotlib figures (no pyplot: no global state) as inline SVG, text kept as text: no files
beside the report, no reference to another host."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure

RC = {"svg.fonttype": "none", "svg.hashsalt": "commbench", "font.size": 9,
      "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False}
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}
_PROLOG = re.compile(r"^.*?(?=<svg)", re.S)
_NS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_SIZE = re.compile(r'<svg([^>]*?)\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"')


def style() -> contextlib.AbstractContextManager[None]:
    """The report's matplotlib settings; build and save every figure inside it."""
    return matplotlib.rc_context(RC)


def to_svg(fig: Figure, alt: str) -> Markup:
    """``fig`` as an inline ``<svg>`` (no XML prolog or namespace URLs), scaled to the page."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata=NO_METADATA)
    svg = _NS.sub("", _PROLOG.sub("", buf.getvalue(), count=1))
    svg = _SIZE.sub(lambda m: f'<svg{m.group(1)} role="img" class="fig" '
                              f'style="max-width:{m.group(2)}pt"', svg, count=1)
    title = str(Markup.escape(alt))
    svg = svg.replace(">", f"><title>{title}</title>", 1)
    return Markup(svg)


@dataclass
class Deferred:
    """A figure to draw later, by :func:`draw_all`; templates print it (``__html__``)."""

    build: Callable[..., Markup]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    svg: Markup | None = None

    def draw(self) -> Markup:
        if self.svg is None:
            self.svg = self.build(*self.args, **self.kwargs)
        return self.svg

    def __html__(self) -> str:
        return str(self.draw())


def later(build: Callable[..., Markup], *args: Any, **kwargs: Any) -> Deferred:
    return Deferred(build, args, kwargs)


def _draw(job: Deferred) -> Markup:
    return job.draw()


def collect(obj: object) -> list[Deferred]:
    """Every :class:`Deferred` inside nested dicts, lists and tuples."""
    if isinstance(obj, Deferred):
        return [obj]
    if isinstance(obj, dict):
        return [d for v in obj.values() for d in collect(v)]
    if isinstance(obj, list | tuple):
        return [d for v in obj for d in collect(v)]
    return []


def draw_all(jobs: list[Deferred], workers: int | None = None) -> None:
    """Draw every pending figure, in forked workers where there are several cores (matplotlib is
    single-threaded), else here."""
    pending = [j for j in jobs if j.svg is None]
    n = min(len(pending), workers or len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1)
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for j in pending:
            j.draw()
        return
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
        for j, svg in zip(pending, pool.map(_draw, pending)):
            j.svg = svg
