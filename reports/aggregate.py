"""Aggregation before plotting: one point (the medians) per (run, panel, algorithm, world, size),
so the figures' cost does not grow with the records per key."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

# A panel is one figure: what must be equal for lines to be comparable.
PANEL_KEYS = ("collective", "transport", "dtype", "op")
POINT_KEYS = ("run", "algorithm", "world_size", "ranks_per_node", "nbytes")
VALUES = ("time_us_median", "time_us_p5", "time_us_p95", "busbw_gbps", "algbw_gbps")


def panel_title(key: Sequence[object]) -> str:
    collective, transport, dtype, op = key
    return f"{collective} · {transport} · {dtype} · {op}"


def panels(df: pd.DataFrame, limit: int) -> tuple[list[tuple[str, pd.DataFrame]], list[str]]:
    """The first ``limit`` panels (largest first) and the titles of those left out."""
    if df.empty:
        return [], []
    groups = sorted(df.groupby(list(PANEL_KEYS), dropna=False, sort=True),
                    key=lambda kv: -len(kv[1]))
    shown = [(panel_title(k), g) for k, g in groups[:limit]]
    return shown, [panel_title(k) for k, _ in groups[limit:]]


def world_label(world: int, rpn: float) -> str:
    if rpn != rpn or rpn in (0, world):  # NaN or one node
        return f"world size {int(world)}"
    return f"world size {int(world)} ({int(world // rpn)} nodes × {int(rpn)})"


def points(df: pd.DataFrame) -> pd.DataFrame:
    """Median of each value per point, plus ``where`` (the subplot label) and ``n`` records."""
    if df.empty:
        return pd.DataFrame(columns=[*POINT_KEYS, *VALUES, "n", "where"])
    keys = list(POINT_KEYS)
    g = df.assign(ranks_per_node=df["ranks_per_node"].fillna(0)).groupby(keys, sort=True)
    out = g[list(VALUES)].median()
    out["n"] = g.size()
    out = out.reset_index()
    out["where"] = [world_label(w, r) for w, r in zip(out["world_size"], out["ranks_per_node"])]
    return out


def nearest(values: Sequence[int], target: float) -> int:
    arr = np.asarray(values, dtype=float)
    return int(arr[np.argmin(np.abs(np.log(arr) - np.log(target)))])


def scaling_sizes(pts: pd.DataFrame, count: int = 3) -> list[int]:
    """Message sizes measured at two or more world sizes: smallest, middle (geometric), largest."""
    per_size = pts.groupby("nbytes")["world_size"].nunique()
    sizes = sorted(int(s) for s in per_size[per_size >= 2].index)
    if len(sizes) <= count:
        return sizes
    mid = nearest(sizes, float(np.sqrt(sizes[0] * sizes[-1])))
    return sorted({sizes[0], mid, sizes[-1]})


def iter_groups(df: pd.DataFrame, keys: Sequence[str]) -> Iterator[tuple[tuple[object, ...],
                                                                          pd.DataFrame]]:
    for k, g in df.groupby(list(keys), sort=True, dropna=False):
        yield (k if isinstance(k, tuple) else (k,)), g
