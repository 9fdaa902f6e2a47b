"""Concurrent groups and overlap (``kind: concurrent``): each group's alone and together times
and slowdown (:mod:`bench.concurrent.table`), and each overlap case with OSU's four figures and
how it was progressed."""

from __future__ import annotations

from typing import Any

from bench.concurrent.table import group_rows, overlap_rows
from bench.units import format_size
from reports.data import ReportData, Run
from reports.sections import Options, Section, section


def _first(run: Run, kind: str, col: str) -> Any:
    df = run.records[run.records["kind"] == kind]
    vals = df[col].dropna() if col in df else []
    return vals.iloc[0] if len(vals) else None


def _run(run: Run) -> dict[str, Any] | None:
    recs = run.records.to_dict("records")
    groups = [{"group": r.group, "members": ",".join(map(str, r.members)),
               "collective": r.collective, "algorithm": r.algorithm,
               "size": format_size(r.nbytes), "nbytes": r.nbytes, "alone": r.alone_us,
               "together": r.together_us, "slowdown": r.slowdown,
               "with": ", ".join(r.together_with)} for r in group_rows(recs)]
    overlap = [{**o, "size": format_size(int(o["nbytes"]))} for o in overlap_rows(recs)]
    if not groups and not overlap:
        return None
    return {"label": run.label, "groups": groups, "overlap": overlap,
            "concurrency": _first(run, "concurrent", "concurrency"),
            "background": _first(run, "concurrent", "background")}


@section("concurrent", 47, reads=("concurrent", "overlap"))
def build(data: ReportData, opts: Options) -> Section | None:
    runs = [r for r in (_run(run) for run in data.runs) if r is not None]
    if not runs:
        return None
    return Section("concurrent", "Concurrent groups and overlap", "concurrent.html.j2",
                   {"runs": runs})
