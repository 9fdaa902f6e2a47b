"""Link probe: per link class, the node x node matrix as heatmaps, and the slow nodes and links
named by host and rank (``commbench probe``, records of kind ``probe``; rule in
:mod:`bench.probe.outliers`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bench.probe.matrix import class_summary, node_matrix
from bench.probe.outliers import find, node_names, tests, z_for
from bench.units import format_size
from reports.data import ReportData, Run
from reports.heatmap import heatmap
from reports.sections import Options, Section, section
from reports.svg import later

DEFAULT_THRESHOLD = 0.25


def _threshold(run: Run) -> float:
    sc = run.meta.get("scenario")
    t = sc.get("threshold") if isinstance(sc, dict) else None
    return float(t) if isinstance(t, (int, float)) and t > 0 else DEFAULT_THRESHOLD


def _first(df: pd.DataFrame, col: str) -> Any:
    vals = df[col].dropna() if col in df else pd.Series(dtype=object)
    return vals.iloc[0] if len(vals) else None


def _run(run: Run, opts: Options) -> dict[str, Any] | None:
    df = run.records[run.records["kind"] == "probe"]
    if df.empty:
        return None
    recs = df.to_dict("records")
    sizes = sorted({int(r["nbytes"]) for r in recs})
    small, large = sizes[0], sizes[-1]
    names = node_names(recs)
    labels = [f"{n} {names[n][2]}" if len({h for _, _, h in names.values()}) > 1 else str(n)
              for n in sorted(names)]
    threshold = _threshold(run)
    z = z_for(tests(recs))
    found = find(recs, threshold, z)
    emulation = _first(df, "emulation")
    return {
        "label": run.label, "pairs": len({(r["src"], r["dst"]) for r in recs}),
        "ranks": int(df["world_size"].max()), "nodes": len(names),
        "layout": _first(df, "layout"), "repeats": _first(df, "repeats"),
        "window": _first(df, "window"), "timer": _first(df, "timer"),
        "emulation": emulation if isinstance(emulation, dict) else None,
        "oversubscribed": bool(df["oversubscribed"].any()),
        "classes": [{**r, "size": format_size(r["nbytes"])} for r in class_summary(recs)],
        "latency": later(heatmap, node_matrix(recs, "latency_us_median", small), labels,
                         f"One-way latency at {format_size(small)}, median over pairs [{run.label}]",
                         "µs", False),
        "bandwidth": later(heatmap, node_matrix(recs, "uni_gbps", large), labels,
                           f"Unidirectional bandwidth at {format_size(large)}, median over pairs "
                           f"[{run.label}]", "GB/s", True),
        "small": format_size(small), "large": format_size(large),
        "threshold": threshold, "z": z,
        "nodes_out": [_row(o) for o in found if o.what == "node"][: opts.max_rows],
        "links_out": [_row(o) for o in found if o.what == "link" and not o.explained_by][: opts.max_rows],
        "explained": len({o.name for o in found if o.what == "link" and o.explained_by}),
    }


def _row(o: Any) -> dict[str, Any]:
    return {"name": o.name, "cls": o.link_class, "measurement": o.measurement,
            "size": format_size(o.nbytes), "nbytes": o.nbytes, "excess": 100 * o.excess,
            "noise": 100 * o.noise, "value": o.value_us, "reference": o.reference_us}


@section("probe")
def build(data: ReportData, opts: Options) -> Section | None:
    runs = [r for r in (_run(run, opts) for run in data.runs) if r is not None]
    if not runs:
        return None
    return Section("probe", "Link probe", "probe.html.j2", {"runs": runs})
