"""Prediction: predicted curves dashed beside measured ones, and the error of each :data:`KEY`
both have (medians of each side)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from markupsafe import Markup

from bench.units import format_size
from reports import figures
from reports.aggregate import world_label
from reports.data import ReportData
from reports.sections import Options, Section, section
from reports.svg import later, style

KEY = ["collective", "algorithm", "world_size", "ranks_per_node", "nbytes", "dtype"]


def _flag(df: pd.DataFrame) -> pd.Series:
    if "predicted" not in df:
        return pd.Series(False, index=df.index)
    return df["predicted"].map(lambda v: bool(v) if v is not None and v == v else False)


def pair(df: pd.DataFrame) -> pd.DataFrame:
    """One row per key measured and predicted: both median times and the relative error."""
    df = df.assign(ranks_per_node=df["ranks_per_node"].fillna(0), _pred=_flag(df))
    med = df.groupby([*KEY, "_pred"])["time_us_median"].median().unstack("_pred")
    if True not in med.columns or False not in med.columns:
        return pd.DataFrame(columns=[*KEY, "measured", "predicted", "error"])
    out = med.rename(columns={False: "measured", True: "predicted"}).dropna().reset_index()
    out["error"] = out["predicted"] / out["measured"] - 1.0
    return out


def curves(df: pd.DataFrame, title: str, max_subplots: int) -> Markup:
    """Median time against size per world size: measured solid, predicted dashed."""
    df = df.assign(ranks_per_node=df["ranks_per_node"].fillna(0), _pred=_flag(df))
    pts = df.groupby([*KEY, "_pred"])["time_us_median"].median().reset_index()
    both = pts.groupby(["world_size", "ranks_per_node"])["_pred"].nunique()
    worlds = [w for w, n in both.items() if n == 2] or list(both.index)
    worlds = sorted(worlds)[:max_subplots]
    colors = figures.algorithm_colors(pts["algorithm"].unique())
    with style():
        fig, axes = figures._panels(len(worlds), min(len(worlds), 2))
        for (w, rpn), ax in zip(worlds, axes):
            sub = pts[(pts.world_size == w) & (pts.ranks_per_node == rpn)]
            for (alg, pred), line in sub.groupby(["algorithm", "_pred"], sort=True):
                line = line.sort_values("nbytes")
                ax.plot(line["nbytes"], line["time_us_median"], "--" if pred else "-",
                        marker="" if pred else "o", markersize=3, color=colors.get(alg, "#555"),
                        linewidth=1.3, label=None if pred else alg)
            ax.plot([], [], "-", marker="o", markersize=3, color="#777", label="measured")
            ax.plot([], [], "--", color="#777", label="predicted (dashed)")
            figures.size_panel(ax, world_label(w, rpn), "median time (µs)", logy=True)
        return figures._finish(fig, title)


def _summary(errs: Sequence[float]) -> dict[str, object]:
    s = pd.Series(list(errs), dtype=float).abs()
    return {"n": len(s), "median": s.median() if len(s) else None, "worst": s.max() if len(s) else None}


@section("prediction", 70)
def build(data: ReportData, opts: Options) -> Section | None:
    df = data.ok_collectives()
    if not _flag(df).any():
        return None
    paired = pair(df)
    big = paired[paired["nbytes"] >= opts.latency_max_bytes]
    figs = []
    for c, g in list(df.groupby("collective", sort=True))[: opts.max_panels]:
        figs.append({"title": c, "figure": later(curves, g, f"Predicted (dashed) and measured — {c}",
                                                 opts.max_subplots)})
    rows = [{**r, "size": format_size(int(r["nbytes"]))}
            for r in paired.sort_values([*KEY]).head(opts.max_rows).to_dict("records")]
    return Section("prediction", "Prediction", "prediction.html.j2", {
        "figures": figs, "rows": rows, "total": len(paired),
        "all": _summary(paired["error"]), "big": _summary(big["error"]),
        "big_from": format_size(opts.latency_max_bytes),
        "profiles": sorted({str(p.get("name")) for p in df.get("profile", pd.Series(dtype=object))
                            if isinstance(p, dict)}),
    })
