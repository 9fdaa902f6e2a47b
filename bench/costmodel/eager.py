"""An MPI's eager/rendezvous switch fitted from ping-pong latencies: a change point in the
latency-vs-size curve, for ``commbench calibrate``. The model is the evaluator's own
(:meth:`bench.costmodel.net.Net.protocol`); the rule (one point per size, bounded linear least
squares per candidate break, an F test with Bonferroni) and its limits: docs/predict.md, "The
MPI protocol switch"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import lsq_linear
from scipy.stats import f as f_dist

from bench.costmodel.profile import Mpi

LEVEL = 0.05  # significance of the step, after Bonferroni over the candidate breaks
MIN_SIDE = 3  # distinct sizes on each side of a break
METHOD = ("piecewise linear change point on the median one-way latency per size: for each gap "
          "between measured sizes, bounded linear least squares (alpha, 1/beta, C, R >= 0) on "
          "relative residuals; the break of least squares; kept when an F test against one alpha-beta line, "
          "Bonferroni over the candidate breaks, gives p < 0.05 and R > 0 "
          "(bench/costmodel/eager.py)")


@dataclass(frozen=True)
class SwitchFit:
    """The fit: ``mpi`` (None: no significant step), the link's α and β under it, and what a
    profile says about how they were taken (``how``)."""

    mpi: Mpi | None
    alpha: float  # s: the eager side's intercept
    beta: float  # B/s: 1 / the rendezvous side's slope (the single line's without a step)
    how: dict[str, Any]
    tested: bool = True  # False: too few sizes to test for a step (the curve cannot tell)


def _solve(cols: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, float]:
    """Non-negative least squares of relative residuals; (coefficients, residual sum)."""
    a = cols / t[:, None]
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    sol = lsq_linear(a / scale, np.ones_like(t), bounds=(0.0, np.inf), method="bvls")
    x = sol.x / scale
    r = a @ x - 1.0
    return x, float(r @ r)


def _design(n: np.ndarray, limit: float | None) -> np.ndarray:
    if limit is None:
        return np.column_stack([np.ones_like(n), n])
    eager = n <= limit
    return np.column_stack([np.ones_like(n), n, n * eager, (~eager).astype(float)])


def fit_switch(sizes: Sequence[float], seconds: Sequence[float], level: float = LEVEL,
               min_side: int = MIN_SIDE) -> SwitchFit:
    """The switch of the ping-pong one-way latencies ``seconds`` at ``sizes`` (bytes; several
    points per size allowed, e.g. one per pair), or none (rule: module doc)."""
    raw_n = np.asarray(sizes, dtype=np.float64)
    raw_t = np.asarray(seconds, dtype=np.float64)
    if raw_n.shape != raw_t.shape or not raw_n.size or np.any(raw_t <= 0) or np.any(raw_n < 0):
        raise ValueError("fit_switch: sizes and positive times of the same length expected")
    n = distinct = np.unique(raw_n)
    t = np.array([np.median(raw_t[raw_n == s]) for s in distinct])
    base = {"method": METHOD, "points": int(raw_n.size), "sizes": [int(s) for s in distinct],
            "median_latency_s": [_r(x) for x in t]}
    x0, rss0 = _solve(_design(n, None), t)
    line = (float(x0[0]), 1.0 / x0[1] if x0[1] > 0 else float("inf"))
    cands = distinct[min_side - 1:distinct.size - min_side]
    if n.size - 4 < 1 or not cands.size:
        return SwitchFit(None, *line, {**base, "why": (
            f"{distinct.size} sizes: too few for a break with {min_side} sizes on each side "
            f"and a residual to test it")}, tested=False)
    fits = [(*_solve(_design(n, e), t), float(e)) for e in cands]
    x1, rss1, limit = min(fits, key=lambda f: f[1])
    dof = n.size - 4
    if rss0 - rss1 <= 1e-12 * max(rss0, 1e-300):
        p = 1.0
    elif rss1 <= 1e-24:
        p = 0.0
    else:
        p = float(f_dist.sf((rss0 - rss1) / 2 / (rss1 / dof), 2, dof))
    p_adj = min(1.0, p * cands.size)
    alpha, slope, copy, rdv = (float(v) for v in x1)
    test = {"candidates": int(cands.size), "best_limit_bytes": int(limit),
            "rendezvous_s": _r(rdv), "eager_s_per_byte": _r(copy),
            "rss_line": _r(rss0), "rss_switch": _r(rss1), "p_bonferroni": _r(p_adj)}
    if p_adj >= level or rdv <= 0 or slope <= 0:
        why = (f"no significant step: p = {p_adj:.3g} (Bonferroni over {cands.size} breaks) "
               f"at the best break {int(limit)} B" if p_adj >= level else
               f"the best break {int(limit)} B has no rendezvous step (R = 0), only a change of "
               "slope" if rdv <= 0 else "the rendezvous side has no transfer cost (slope 0)")
        return SwitchFit(None, *line, {**base, **test, "why": why})
    return SwitchFit(Mpi(float(limit), rdv, copy), alpha, 1.0 / slope, {**base, **test})


def _r(x: float) -> float:
    return float(f"{x:.6g}")


CLASS_PREFERENCE = ("inter", "spine", "intra")  # the network's protocol first: it is what scales


def from_probe(records: Sequence[dict[str, Any]]) -> tuple[str, SwitchFit] | None:
    """The switch of a probe's pairs on the first class of :data:`CLASS_PREFERENCE` it crossed;
    None without probe records."""
    for cls in CLASS_PREFERENCE:
        mine = [r for r in records if r.get("link_class") == cls]
        if mine:
            sw = fit_switch([float(r["nbytes"]) for r in mine],
                            [float(r["latency_us_median"]) * 1e-6 for r in mine])
            return cls, sw
    return None
