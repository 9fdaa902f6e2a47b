"""Which strategy: ``commbench advise`` records per model and world size, ranked, with a stacked
bar per layout and memory against the device limit; with ``--from``, measured beside them."""

from __future__ import annotations

from typing import Any

import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure

from reports.data import ReportData
from reports.figures import PALETTE
from reports.sections import Options, Section, section
from reports.svg import later, style, to_svg

ROWS = 12  # layouts per table and figure
GIB = 2**30


def _bars(rows: list[dict[str, Any]], title: str) -> Markup:
    """Stacked horizontal bars: compute, exposed comm per collective, bubble; memory beside."""
    with style():
        kinds = sorted({k for r in rows for k in (r["exposed_ms_by_type"] or {})})
        fig = Figure(figsize=(9.5, 0.35 * len(rows) + 1.4))
        ax, mem = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]}, sharey=True)
        labels = [r["layout"] for r in rows]
        y = list(range(len(rows)))
        left = [0.0] * len(rows)
        parts = [("compute", "compute_ms", "#4c72b0"), *((k, k, PALETTE[(i + 1) % len(PALETTE)])
                                                         for i, k in enumerate(kinds)),
                 ("bubble", "bubble_ms", "#bbbbbb")]
        for name, key, color in parts:
            vals = [float(r.get(key) if key in ("compute_ms", "bubble_ms")
                          else (r["exposed_ms_by_type"] or {}).get(key, 0.0)) for r in rows]
            ax.barh(y, vals, left=left, color=color, label=name)
            left = [a + b for a, b in zip(left, vals)]
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_xlabel("predicted step time (ms)")
        ax.set_title(title, fontsize=9)
        # below the axes, never over a bar: one column per part
        fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="lower center",
                   ncol=min(len(parts), 6), frameon=False)
        mem.barh(y, [r["mem_total_bytes"] / GIB for r in rows],
                 color=["#55a868" if r["fits"] else "#c44e52" for r in rows])
        limit = rows[0].get("memory_limit_bytes")
        if limit:
            mem.axvline(limit / GIB, color="black", linestyle="--", linewidth=1)
        mem.set_xlabel("memory per rank (GiB)")
        fig.tight_layout(rect=(0, 0.45 / fig.get_figheight() * (1 + len(parts) // 6), 1, 1))
        return to_svg(fig, title)


@section("strategy", 50)
def build(data: ReportData, opts: Options) -> Section | None:
    adv = data.ok("advice")
    if adv.empty:
        return None
    tables = []
    ranked = adv[pd.to_numeric(adv["place"], errors="coerce") > 0]
    for (run, model, world), g in ranked.groupby(["run", "model", "world_size"], sort=True):
        rows = g.sort_values("place").head(ROWS).to_dict("records")
        title = f"{model} on {int(world)} ranks"
        tables.append({"run": run, "title": title, "rows": rows,
                       "figure": later(_bars, rows, title), "total": len(g)})
        if len(tables) >= opts.max_panels * 4:
            break
    checked = adv[adv.get("validation", pd.Series(False, index=adv.index)).fillna(False)
                  .astype(bool)] if "validation" in adv else adv.iloc[0:0]
    return Section("strategy", "Which strategy", "strategy.html.j2",
                   {"tables": tables, "checked": checked.to_dict("records"),
                    "bubbles": _bubbles(adv), "several": len(data.runs) > 1})


def _bubbles(adv: pd.DataFrame) -> list[dict[str, Any]]:
    """Pipeline cases of ``advise --from``: measured idle fraction per stage, and the model."""
    if "bubble_check" not in adv:
        return []
    rows = adv[adv["bubble_check"].fillna(False).astype(bool)]
    return [{**r, "stages": " ".join(f"{x:.2f}" for x in r["stage_idle_fraction_by_rank"])}
            for r in rows.sort_values(["model", "strategy", "world_size"]).to_dict("records")]
