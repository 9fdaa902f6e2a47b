"""Concurrent groups (alone and together times, slowdown) and overlap cases
(:mod:`bench.concurrent.table`)."""

from __future__ import annotations

from typing import Any

from bench.concurrent.table import group_rows, overlap_rows
from bench.units import format_size
from reports.data import ReportData, Run
from reports.sections import Options, Section, per_run, section


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
            "concurrency": run.first("concurrent", "concurrency"),
            "background": run.first("concurrent", "background")}


@section("concurrent", 47, reads=("concurrent", "overlap"))
def build(data: ReportData, opts: Options) -> Section | None:
    return per_run(data, "concurrent", "Concurrent groups and overlap", "concurrent.html.j2", _run)
