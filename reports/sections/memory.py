"""Memory: peak bytes per rank per training strategy, split into the parts counted exactly."""

from __future__ import annotations

import pandas as pd

from reports import figures
from reports.data import ReportData
from reports.sections import Options, Section, section
from reports.svg import later

PARTS = ("mem_params_bytes", "mem_grads_bytes", "mem_optim_bytes")
MAX_BARS = 40


def bars(train: pd.DataFrame, several_runs: bool) -> pd.DataFrame:
    keys = ["run", "model", "strategy", "world_size"]
    g = train.groupby(keys, sort=True, dropna=False)
    cols = [*PARTS, "mem_peak_bytes", "step_time_ms_median", "samples_per_s", "scaling_efficiency",
            "comm_bytes_per_step", "loss_max_abs_diff"]
    agg = g[cols].median(numeric_only=False).reset_index()
    known = agg[list(PARTS)].fillna(0).sum(axis=1)
    agg["other"] = (agg["mem_peak_bytes"] - known).clip(lower=0)
    agg["label"] = [f"{m} · {s} · p={int(w)}" + (f" [{r}]" if several_runs else "")
                    for r, m, s, w in zip(agg["run"], agg["model"], agg["strategy"],
                                          agg["world_size"])]
    return agg


@section("memory", 30, reads=("training",))
def build(data: ReportData, opts: Options) -> Section | None:
    train = data.ok("training")
    if train.empty:  # a collective sweep's buffers are 2 x the size per rank: nothing to show
        return None
    train = train.assign(loss_max_abs_diff=pd.to_numeric(train["loss_max_abs_diff"],
                                                         errors="coerce"))
    agg = bars(train, len(data.runs) > 1)
    fig_rows = agg.head(MAX_BARS)
    fig = later(figures.memory, fig_rows, "Peak memory per rank")
    return Section("memory", "Memory", "memory.html.j2",
                   {"rows": agg.head(opts.max_rows).to_dict("records"), "figure": fig,
                    "total": len(agg), "bars_shown": len(fig_rows)})
