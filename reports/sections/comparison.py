"""Several runs: per-key ratio of median times against the first run (the baseline)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.store.records import KEY_FIELDS
from reports.data import ReportData
from reports.sections import Options, Section, section

KEY = KEY_FIELDS[1:]  # the gate's key but for the record kind


def ratio_table(df: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """One row per key: each run's median time and its ratio to the first run's, largest first."""
    keyed = df.assign(ranks_per_node=df["ranks_per_node"].fillna(0))
    wide = keyed.pivot_table(index=list(KEY), columns="run", values="time_us_median",
                             aggfunc="median")
    wide = wide.reindex(columns=labels)
    base = wide[labels[0]]
    ratios = wide[labels[1:]].div(base, axis=0)
    ratios.columns = [f"ratio:{c}" for c in ratios.columns]
    out = pd.concat([wide, ratios], axis=1)
    change = np.log(ratios.astype(float)).abs().max(axis=1, skipna=True)
    out["change"] = change.fillna(-1.0)
    return out.sort_values("change", ascending=False).reset_index()


@section("comparison", 60, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section | None:
    if len(data.runs) < 2:
        return None
    table = ratio_table(data.ok_collectives(), data.labels)
    rows = []
    for r in table.head(opts.max_rows).to_dict("records"):
        rows.append({"key": {k: r[k] for k in KEY},
                     "times": [r[lab] for lab in data.labels],
                     "ratios": [r[f"ratio:{lab}"] for lab in data.labels[1:]]})
    return Section("comparison", "Comparison between runs", "comparison.html.j2",
                   {"rows": rows, "total": len(table), "base": data.labels[0],
                    "others": data.labels[1:], "labels": data.labels})
