"""All cases: every record, failed ones first, as a sortable and filterable table."""

from __future__ import annotations

import pandas as pd

from bench.units import format_size
from reports.data import ReportData
from reports.sections import Options, Section, section

ORDER = ("kind", "collective", "transport", "dtype", "op", "world_size", "ranks_per_node",
         "nbytes", "algorithm", "strategy", "model", "run")
# the table's columns read as they are: name in the table -> record field
SHOWN = {**{f: f for f in ("run", "status", "kind", "collective", "transport", "world_size",
                           "ranks_per_node", "nbytes", "dtype", "op", "wrong", "iters")},
         "p5": "time_us_p5", "p95": "time_us_p95", "busbw": "busbw_gbps"}


def _name(r: dict[str, object]) -> str:
    if r.get("kind") == "training":
        return f"{r.get('strategy')} · {r.get('model')}"
    if r.get("kind") == "advice":  # a predicted layout (Which strategy ranks them)
        return f"{r.get('layout')} · {r.get('model')}"
    return str(r.get("algorithm"))


def _time_us(r: dict[str, object]) -> object:
    if r.get("kind") == "training":
        t = r.get("step_time_ms_median")
        return t * 1e3 if isinstance(t, float) and t == t else None
    if r.get("kind") == "advice":
        t = r.get("step_time_ms")
        return t * 1e3 if isinstance(t, float) and t == t else None
    return r.get("time_us_median")


def _error(r: dict[str, object]) -> str:
    """The record's error; blank where it has none (NaN in a frame beside failed records)."""
    e = r.get("error")
    return e if isinstance(e, str) else ""


def rows(df: pd.DataFrame, limit: int) -> list[dict[str, object]]:
    failed_first = df.assign(_ok=(df["status"] == "ok")).sort_values(
        ["_ok", *ORDER], kind="stable", na_position="last")
    out = []
    for r in failed_first.head(limit).to_dict("records"):
        nbytes = r.get("nbytes")
        out.append({**{k: r.get(col) for k, col in SHOWN.items()}, "name": _name(r),
                    "size": format_size(int(nbytes)) if nbytes == nbytes and nbytes else "",
                    "time_us": _time_us(r),
                    "note": _error(r) or ("oversubscribed" if r.get("oversubscribed") else "")})
    return out


@section("cases", 90)
def build(data: ReportData, opts: Options) -> Section | None:
    df = data.frame[data.frame["kind"] != "probe"]  # pairs of a probe: its own section lists them
    if df.empty and not data.frame.empty:
        return None  # nothing but a probe's pairs: nothing to list
    return Section("cases", "All cases", "cases.html.j2",
                   {"rows": rows(df, opts.max_rows), "total": len(df),
                    "failed": int((df["status"] != "ok").sum())})
