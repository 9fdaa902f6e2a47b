"""What to choose: the fastest algorithm per message-size range and world size, and its margin
over the vendor collective (ratio of medians: native time / best time)."""

from __future__ import annotations

import pandas as pd

from bench.units import format_size
from reports.aggregate import iter_groups, points
from reports.data import VENDOR, ReportData
from reports.sections import Options, Section, section

GROUP = ("run", "collective", "transport", "dtype", "op", "world_size", "ranks_per_node")


def winners(pts: pd.DataFrame) -> list[dict[str, object]]:
    """Per size: best algorithm by median time and speed-up over native (None when native was
    not measured). ``pts`` holds one group's points."""
    out = []
    for size, g in pts.groupby("nbytes", sort=True):
        g = g.set_index("algorithm")["time_us_median"].dropna()
        if g.empty:
            continue
        best = str(g.idxmin())
        native = g.get(VENDOR)
        rest = g.drop(index=best)
        out.append({"size": int(size), "best": best, "time": float(g[best]),
                    "vs_native": float(native / g[best]) if native is not None else None,
                    "runner_up": str(rest.idxmin()) if not rest.empty else None,
                    "vs_runner_up": float(rest.min() / g[best]) if not rest.empty else None})
    return out


def ranges(per_size: list[dict[str, object]]) -> list[dict[str, object]]:
    """Consecutive sizes with the same winner merged into one range."""
    out: list[dict[str, object]] = []
    for w in per_size:
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


@section("choose")
def build(data: ReportData, opts: Options) -> Section:
    df = data.ok_collectives()
    tables = []
    for key, g in iter_groups(df, GROUP):
        run, coll, transport, dtype, op, world, rpn = key
        rows = ranges(winners(points(g)))
        if rows:
            tables.append({"run": run, "title": f"{coll} · {transport} · {dtype} · {op} · "
                                                f"world size {int(world)}"
                                                + (f" ({int(world // rpn)} nodes × {int(rpn)})"
                                                   if rpn == rpn and 0 < rpn < world else ""),
                           "rows": rows})
    return Section("choose", "What to choose", "choose.html.j2",
                   {"tables": tables[: opts.max_panels * 8], "total": len(tables),
                    "several": len(data.runs) > 1})
