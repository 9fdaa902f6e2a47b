"""The probe's node x node matrix as a heatmap: empty (NaN) cells white, values written in the
cells up to :data:`ANNOTATE_MAX` nodes."""

from __future__ import annotations

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from reports.svg import style, to_svg

ANNOTATE_MAX = 16


def heatmap(matrix: np.ndarray, labels: list[str], title: str, unit: str,
            higher_is_better: bool) -> Markup:
    """``matrix`` (nodes x nodes) with node ``labels``; the better end of the scale is yellow."""
    n = matrix.shape[0]
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for a {n} x {n} matrix")
    side = min(9.0, max(3.2, 0.45 * n + 1.8))
    with style():
        fig = Figure(figsize=(side + 1.2, side))
        ax = fig.subplots()
        fig.subplots_adjust(left=0.2, right=0.88, bottom=0.18, top=0.9)
        data = np.ma.masked_invalid(matrix)
        im = ax.imshow(data, cmap="viridis" if higher_is_better else "viridis_r",
                       interpolation="nearest")
        ax.grid(False)
        ticks = list(range(n)) if n <= 32 else list(range(0, n, max(1, n // 16)))
        ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=90, fontsize=7)
        ax.set_yticks(ticks, [labels[i] for i in ticks], fontsize=7)
        if n <= ANNOTATE_MAX and data.count():
            lo, hi = float(data.min()), float(data.max())
            mid = (lo + hi) / 2
            for i in range(n):
                for j in range(n):
                    v = matrix[i, j]
                    if v == v:
                        dark = (v < mid) != (not higher_is_better)
                        ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=6,
                                color="white" if dark else "black")
        bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        bar.set_label(unit)
        ax.set_title(title)
        return to_svg(fig, title)
