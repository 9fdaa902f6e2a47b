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
    """Per group and size: the best algorithm by median time, its speed-up over native (NaN when
    native was not measured) and over the runner-up. One vectorised pass over all groups."""
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
    for w in per_size.to_dict("records"):
        w = {**w, "size": int(w["nbytes"]),
             "vs_native": w["vs_native"] if w["vs_native"] == w["vs_native"] else None,
             "vs_runner_up": w["vs_runner_up"] if w["vs_runner_up"] == w["vs_runner_up"] else None}
        if out and out[-1]["best"] == w["best"]:
            out[-1]["hi"] = w["size"]
            out[-1]["margins"].append(w["vs_native"])  # type: ignore[attr-defined]
            out[-1]["runner"].append(w["vs_runner_up"])  # type: ignore[attr-defined]
        else:
            out.append({"lo": w["size"], "hi": w["size"], "best": w["best"],
                        "margins": [w["vs_native"]], "runner": [w["vs_runner_up"]]})
    for r in out:
        m = [x for x in r.pop("margins") if x is not None]  # type: ignore[union-attr]
        u = [x for x in r.pop("runner") if x is not None]  # type: ignore[union-attr]
        r["range"] = format_size(int(r["lo"])) + ("" if r["lo"] == r["hi"]
                                                  else f" – {format_size(int(r['hi']))}")
        r["native_lo"], r["native_hi"] = (min(m), max(m)) if m else (None, None)
        r["runner_lo"] = min(u) if u else None
    return out


@section("choose", 40, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section:
    per_size = winners(data.ok_collectives())
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
