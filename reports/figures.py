"""The report's figures, from aggregated frames: colours follow the algorithm (the vendor's black
and thicker), line styles the run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from bench.units import format_size
from reports.data import VENDOR
from reports.svg import style, to_svg

RUN_STYLES = ("-", "--", ":", "-.")
RUN_MARKERS = ("o", "s", "^", "D", "v", "P")
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f")
MEM_PARTS = (("mem_params_bytes", "parameters", "#1f77b4"), ("mem_grads_bytes", "gradients", "#ff7f0e"),
             ("mem_optim_bytes", "optimizer state", "#2ca02c"), ("other", "other (peak − parts)", "#bbbbbb"))


def algorithm_colors(algorithms: Sequence[str]) -> dict[str, str]:
    others = sorted(a for a in set(algorithms) if a != VENDOR)
    colors = {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(others)}
    colors[VENDOR] = "#000000"
    return colors


MAX_TICKS = 9  # labelled sizes per axis: every k-th measured size beyond this
MIN_DECADES = 0.3  # a log y axis spans at least 10^this (2x): a 1 % gap must not fill the panel
CHAR_IN = 0.065  # inches per character of a legend label at fontsize 8, plus its line and gap
LEGEND_PAD_IN = 0.5


def _size_axis(ax: object, sizes: Sequence[float] = ()) -> None:
    """A log2 size axis, ticked at the measured ``sizes`` (every k-th when there are many)."""
    ax.set_xscale("log", base=2)  # type: ignore[attr-defined]
    ticks = sorted({float(s) for s in sizes if s and s > 0})
    step = max(1, math.ceil(len(ticks) / MAX_TICKS))
    ax.xaxis.set_major_locator(  # type: ignore[attr-defined]
        FixedLocator(ticks[::step]) if ticks else LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(  # type: ignore[attr-defined]
        lambda v, _: format_size(int(v)) if v >= 1 and float(v).is_integer() else ""))
    ax.tick_params(axis="x", labelrotation=45)  # type: ignore[attr-defined]
    ax.xaxis.set_minor_locator(NullLocator())  # type: ignore[attr-defined]


def size_panel(ax: Any, title: str, ylabel: str, logy: bool, sizes: Sequence[float] = ()) -> None:
    """A panel against message size (ticked at ``sizes``, the measured ones): axes, title, labels."""
    _size_axis(ax, sizes)
    if logy:
        _log_y(ax)
        _min_span(ax)
    ax.set_title(title)
    ax.set_xlabel("message size")
    ax.set_ylabel(ylabel)


def _log_y(ax: Any) -> None:
    """Log y axis labelled with plain numbers (10^n labels cost more than the rest to draw)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=8))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def _min_span(ax: Any) -> None:
    """Widen a log y axis narrower than :data:`MIN_DECADES` about its geometric centre."""
    lo, hi = ax.get_ylim()
    if lo > 0 and hi > 0 and math.log10(hi / lo) < MIN_DECADES:
        mid, half = math.sqrt(lo * hi), 10 ** (MIN_DECADES / 2)
        ax.set_ylim(mid / half, mid * half)


def _line(ax: object, x: pd.Series, y: pd.Series, alg: str, run_index: int, label: str,
          colors: dict[str, str]) -> None:
    native = alg == VENDOR
    ax.plot(x, y, RUN_STYLES[run_index % len(RUN_STYLES)],  # type: ignore[attr-defined]
            marker=RUN_MARKERS[run_index % len(RUN_MARKERS)], markersize=3,
            color=colors.get(alg, "#555555"), linewidth=2.2 if native else 1.3, label=label)


def _grid(rows: int, cols: int, col_w: float, row_h: float, legend_w: float = 1.9,
          rotated_x: bool = True) -> tuple[Figure, Any]:
    """A figure of ``rows`` x ``cols`` axes, room for a legend on the right; fixed margins (no
    text measuring) halve the drawing time."""
    width, height = col_w * cols + legend_w + 0.95, row_h * rows + 0.9
    fig = Figure(figsize=(width, height))
    axes = fig.subplots(rows, cols, squeeze=False)
    bottom = (0.85 if rotated_x else 0.6) / height
    fig.subplots_adjust(left=0.95 / width, right=1 - legend_w / width, bottom=bottom,
                        top=1 - 0.55 / height, wspace=0.45, hspace=0.75)
    return fig, axes


def _panels(n: int, cols: int, col_w: float = 3.6, row_h: float = 2.9) -> tuple[Figure, list[Any]]:
    """A figure of ``n`` panels, ``cols`` to a row (the cells left over hidden), and the panels."""
    fig, axes = _grid(math.ceil(n / cols), cols, col_w, row_h)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _finish(fig: Figure, title: str) -> Markup:
    """One legend for all panels, on the right; the title; the figure as SVG."""
    seen: dict[str, Any] = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    _legend_room(fig, list(seen))
    fig.legend(list(seen.values()), list(seen.keys()), loc="upper left", fontsize=8,
               bbox_to_anchor=(fig.subplotpars.right + 0.005, 1 - 0.5 / fig.get_figheight()),
               frameon=False)
    fig.suptitle(title)
    return to_svg(fig, title)


def _legend_room(fig: Figure, labels: Sequence[str]) -> None:
    """Widen ``fig`` on the right until its longest legend label fits whole (the axes keep
    their size): run ids in multi-run reports are long."""
    if not labels:
        return
    width = fig.get_figwidth()
    p = fig.subplotpars
    need = CHAR_IN * max(map(len, labels)) + LEGEND_PAD_IN
    room = width * (1 - p.right)
    if need <= room:
        return
    wide = width + need - room
    fig.set_figwidth(wide)
    fig.subplots_adjust(left=p.left * width / wide, right=p.right * width / wide)


def _lines(sub: pd.DataFrame, x: str, panels: Sequence[tuple[Any, str]], runs: Sequence[str],
           colors: dict[str, str]) -> None:
    """A line per run and algorithm of ``sub``, ``y`` against ``x`` on each (axes, y) of ``panels``."""
    for (run, alg), line in sub.groupby(["run", "algorithm"], sort=True):
        line = line.sort_values(x)
        for ax, y in panels:
            _line(ax, line[x], line[y], alg, runs.index(run),
                  f"{alg} [{run}]" if len(runs) > 1 else alg, colors)


def spread(items: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` of ``items``, evenly spaced, always the first and the last."""
    if len(items) <= limit:
        return list(items)
    idx = sorted({round(i * (len(items) - 1) / (limit - 1)) for i in range(limit)})
    return [items[i] for i in idx]


def by_world_size(points: pd.DataFrame, runs: Sequence[str], y: str, ylabel: str, title: str,
                  logy: bool = False, max_subplots: int = 6) -> Markup:
    """One subplot per world size (at most ``max_subplots``, evenly spread): ``y`` against
    message size, a line per algorithm and run."""
    worlds = spread(points[["world_size", "ranks_per_node", "where"]].drop_duplicates()
                    .sort_values(["world_size", "ranks_per_node"])["where"].tolist(), max_subplots)
    colors = algorithm_colors(points["algorithm"].unique())
    with style():
        fig, axes = _panels(len(worlds), 2 if len(worlds) == 4 else min(len(worlds), 3))
        for w, ax in zip(worlds, axes):
            _lines(points[points["where"] == w], "nbytes", [(ax, y)], runs, colors)
            size_panel(ax, w, ylabel, logy, points.loc[points["where"] == w, "nbytes"].unique())
        return _finish(fig, title)


def scaling(points: pd.DataFrame, runs: Sequence[str], sizes: Sequence[int], title: str) -> Markup:
    """Rows: median time and busbw against world size; one column per message size."""
    colors = algorithm_colors(points["algorithm"].unique())
    with style():
        fig, axes = _grid(2, len(sizes), 3.4, 2.7, rotated_x=False)
        for c, size in enumerate(sizes):
            _lines(points[points["nbytes"] == size], "world_size",
                   [(axes[0][c], "time_us_median"), (axes[1][c], "busbw_gbps")], runs, colors)
            axes[0][c].set_title(f"{format_size(int(size))} per rank")
            _log_y(axes[0][c])
            axes[0][c].set_ylabel("median time (µs)")
            axes[1][c].set_ylabel("busbw (GB/s)")
            for r in range(2):
                axes[r][c].set_xscale("log", base=2)
                axes[r][c].set_xlabel("world size (ranks)")
                axes[r][c].xaxis.set_major_formatter(FuncFormatter(
                    lambda v, _: str(int(v)) if v >= 1 and float(v).is_integer() else ""))
                axes[r][c].xaxis.set_minor_locator(NullLocator())
        return _finish(fig, title)


def memory(bars: pd.DataFrame, title: str) -> Markup:
    """Stacked horizontal bars of per-rank memory (``label`` and :data:`MEM_PARTS` columns)."""
    with style():
        fig = Figure(figsize=(9.5, 0.3 * len(bars) + 1.3))
        fig.subplots_adjust(left=0.3, right=0.97, bottom=0.6 / fig.get_figheight(),
                            top=1 - 0.45 / fig.get_figheight())
        ax = fig.subplots()
        left = pd.Series(0.0, index=bars.index)
        for col, name, color in MEM_PARTS:
            width = bars[col].fillna(0.0) / 2**20
            ax.barh(bars["label"], width, left=left, color=color, label=name)
            left = left + width
        ax.invert_yaxis()
        ax.set_xlabel("MiB per rank (peak)")
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title(title)
        return to_svg(fig, title)
