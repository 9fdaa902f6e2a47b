"""Scaling efficiency: ``E_time(p) = T(p0)/T(p)`` and ``E_bus(p) = busbw(p)/busbw(p0)``, p0 the
smallest world size above 1: world size 1 moves nothing (its time is the overhead floor), so it is
left out. docs/results.md, "The HTML report"."""

from __future__ import annotations

import pandas as pd

from bench.units import format_size
from reports import figures
from reports.aggregate import iter_groups, panels, points, scaling_sizes
from reports.data import ReportData
from reports.sections import Options, Section, section
from reports.sections.choose import communicating
from reports.svg import later


def efficiency(pts: pd.DataFrame, sizes: list[int]) -> list[dict[str, object]]:
    """Rows of (run, algorithm, size, world size, time, busbw, E_time, E_bus)."""
    rows: list[dict[str, object]] = []
    sel = pts[pts["nbytes"].isin(sizes)]
    for (run, alg, size), g in iter_groups(sel, ("run", "algorithm", "nbytes")):
        g = g.groupby("world_size", sort=True)[["time_us_median", "busbw_gbps"]].median()
        if len(g) < 2:
            continue
        p0 = g.index[0]
        above1 = g[g.index > 1]
        bus_ref = above1["busbw_gbps"].iloc[0] if not above1.empty else float("nan")
        for p, r in g.iterrows():
            rows.append({
                "run": run, "algorithm": alg, "size": format_size(int(size)), "world_size": int(p),
                "time_us": r["time_us_median"], "busbw_gbps": r["busbw_gbps"],
                "e_time": g.loc[p0, "time_us_median"] / r["time_us_median"],
                "e_bus": r["busbw_gbps"] / bus_ref if p > 1 and bus_ref > 0 else None,
            })
    return rows


@section("scaling", 20, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section | None:
    shown, left_out = panels(communicating(data.ok_collectives()), opts.max_panels)
    out = []
    for title, df in shown:
        pts = points(df)
        if pts["world_size"].nunique() < 2:
            continue
        sizes = scaling_sizes(pts)
        if not sizes:
            continue
        out.append({"title": title,
                    "figure": later(figures.scaling, pts, data.labels, sizes, f"Scaling — {title}"),
                    "rows": efficiency(pts, sizes)[: opts.max_rows]})
    if not out:  # one world size above 1: nothing to scale
        return None
    return Section("scaling", "Scaling efficiency", "scaling.html.j2",
                   {"panels": out, "left_out": left_out})
