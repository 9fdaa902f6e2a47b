"""Bandwidth: busbw against message size per world size, and latency for small messages."""

from __future__ import annotations

from bench.units import format_size
from reports import figures
from reports.aggregate import panels, points
from reports.data import ReportData
from reports.sections import Options, Section, section
from reports.svg import later


@section("bandwidth", 10, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section | None:
    shown, left_out = panels(data.ok_collectives(), opts.max_panels)
    figs = []
    for title, df in shown:
        pts = points(df)
        multi = pts[pts["world_size"] > 1]  # busbw is 0 at p = 1 by definition: nothing to plot
        bw = (later(figures.by_world_size, multi, data.labels, "busbw_gbps", "busbw (GB/s)",
                                    f"Bus bandwidth — {title}", max_subplots=opts.max_subplots)
              if not multi.empty else None)
        small = pts[pts["nbytes"] <= opts.latency_max_bytes]
        lat = (later(figures.by_world_size, small, data.labels, "time_us_median", "median time (µs)",
                                     f"Latency, messages ≤ {format_size(opts.latency_max_bytes)}"
                                     f" — {title}", logy=True, max_subplots=opts.max_subplots)
               if not small.empty else None)
        figs.append({"title": title, "bandwidth": bw, "latency": lat})
    if not figs:  # no successful collective record: the headline and All cases say so
        return None
    return Section("bandwidth", "Bandwidth", "bandwidth.html.j2",
                   {"figures": figs, "left_out": left_out,
                    "latency_max": format_size(opts.latency_max_bytes)})
