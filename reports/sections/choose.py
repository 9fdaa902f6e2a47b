"""What to choose: the fastest algorithm per message-size range and world size, and its margin
over the vendor collective (ratio of medians: native time / best time)."""

from __future__ import annotations

import pandas as pd

from bench.units import format_size
from reports.aggregate import iter_groups, panel_title, world_label
from reports.data import VENDOR, ReportData
from reports.sections import Options, Section, section

GROUP = ("run", "collective", "transport", "dtype", "op", "world_size", "ranks_per_node")


def winners(df: pd.DataFrame) -> pd.DataFrame:
    """Per group and size: the best algorithm by median time, its speed-up over native and over
    the runner-up."""
    keys = [*GROUP, "nbytes"]
    pts = (df.assign(ranks_per_node=df["ranks_per_node"].fillna(0))
           .groupby([*keys, "algorithm"], sort=True)["time_us_median"].median().dropna()
           .reset_index())
    pts["place"] = pts.groupby(keys)["time_us_median"].rank(method="first")
    best = pts[pts["place"] == 1].drop(columns="place").rename(
        columns={"algorithm": "best", "time_us_median": "time"})
    second = pts[pts["place"] == 2][[*keys, "time_us_median"]].rename(
        columns={"time_us_median": "second"})
    native = pts[pts["algorithm"] == VENDOR][[*keys, "time_us_median"]].rename(
        columns={"time_us_median": "native"})
    out = best.merge(second, on=keys, how="left").merge(native, on=keys, how="left")
    out["vs_native"] = out["native"] / out["time"]
    out["vs_runner_up"] = out["second"] / out["time"]
    return out.sort_values(keys)


def ranges(per_size: pd.DataFrame) -> list[dict[str, object]]:
    """Consecutive sizes with the same winner merged into one range."""
    out: list[dict[str, object]] = []
    streak = (per_size["best"] != per_size["best"].shift()).cumsum()
    for _, g in per_size.groupby(streak, sort=False):
        lo, hi = int(g["nbytes"].iloc[0]), int(g["nbytes"].iloc[-1])
        m, u = g["vs_native"].dropna(), g["vs_runner_up"].dropna()
        out.append({"lo": lo, "hi": hi, "best": g["best"].iloc[0],
                    "range": format_size(lo) + ("" if lo == hi else f" – {format_size(hi)}"),
                    "native_lo": m.min() if len(m) else None,
                    "native_hi": m.max() if len(m) else None,
                    "runner_lo": u.min() if len(u) else None})
    return out


def communicating(df: pd.DataFrame) -> pd.DataFrame:
    """Records of two ranks or more: at world size 1 nothing crosses a link and the time is the
    call's overhead floor, which no choice of algorithm is about."""
    return df[df["world_size"] > 1]


@section("choose", 40, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section | None:
    per_size = winners(communicating(data.ok_collectives()))
    if per_size.empty:
        return None
    tables = []
    for key, g in iter_groups(per_size, GROUP):
        run, coll, transport, dtype, op, world, rpn = key
        if len(tables) >= opts.max_panels * 8:
            break
        rows = ranges(g)
        if rows:
            title = f"{panel_title((coll, transport, dtype, op))} · {world_label(world, rpn)}"
            tables.append({"run": run, "title": title, "rows": rows})
    total = per_size.groupby(list(GROUP)).ngroups if not per_size.empty else 0
    return Section("choose", "What to choose", "choose.html.j2",
                   {"tables": tables, "total": total,
                    "several": len(data.runs) > 1})
