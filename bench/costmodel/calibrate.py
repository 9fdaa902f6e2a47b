"""Fitting a profile to measured runs: α, β per link class, γ, o and the hot-send cost h by robust
least squares, each point's schedule compiled once and priced by the evaluator
(:mod:`bench.costmodel.evaluate`) for trial parameters; what is fitted, what is not and why:
docs/predict.md (Calibration)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from bench.argtypes import CommbenchError
from bench.costmodel.evaluate import Prepared, batches, run, schedule_job
from bench.costmodel.model import Cluster, Placed
from bench.costmodel.net import Net
from bench.costmodel.profile import Link, Profile
from kernels.algorithm import Problem, get_algorithm
from kernels.compiled import Compiled
from kernels.ops import ITEMSIZE
from kernels.registry import UnknownName

PRIOR = 1e-3
POOR_FIT = 0.25  # a fit whose median |relative error| is above this is warned about
DEFAULT = Profile("default", "", "generic starting point", {
    "intra": Link(2e-6, 5e9), "inter": Link(1e-5, 2e9), "spine": Link(1.2e-5, 2e9)},
    gamma=2e-10, overhead=0.0)


class CalibrationError(CommbenchError, ValueError):
    """Runs that cannot be fitted (too few points, nothing modelable); one line."""


BOUNDS = {  # physically plausible ranges (lower, upper) of the fitted parameters
    "alpha": (1e-9, 1.0),  # s: 1 ns .. 1 s per message
    "beta": (1e5, 1e12),  # B/s: 100 kB/s .. 1 TB/s per direction
    "gamma": (1e-15, 1e-6),  # s/B: reduction at 1 PB/s .. 1 MB/s
    "hot": (1e-15, 1e-6),  # s/B: hot sends, + 1 PB/s .. 1 MB/s per byte
    "overhead": (1e-9, 0.1),  # s
}
UNITS = {"alpha": "s", "beta": "B/s", "gamma": "s/B", "overhead": "s", "hot": "s/B"}


@dataclass(frozen=True)
class Point:
    collective: str
    algorithm: str
    world: int
    nbytes: int
    measured: float  # s, median
    placed: Placed
    comp: Compiled
    atoms: np.ndarray | None
    count: int
    itemsize: int
    multi: bool  # some rank posts two messages in one step (o is visible)
    reduces: bool
    hot: bool = False  # some rank sends bytes it wrote earlier in the call


def placed_of(world: int, ranks_per_node: Any) -> Placed:
    """Consecutive ranks per node as the run recorded them (one node when unknown)."""
    rpn = int(ranks_per_node) if isinstance(ranks_per_node, (int, float)) and ranks_per_node == \
        ranks_per_node and ranks_per_node >= 1 else world
    return _placed(world, rpn if world % rpn == 0 else world)


@lru_cache(maxsize=256)
def _placed(world: int, rpn: int) -> Placed:
    return Cluster((rpn,) * (world // rpn)).place(world)


def point(rec: dict[str, Any], max_ranks: int = 256) -> Point | str:
    """The fitting point of a measured record, or why it is not one."""
    p, alg_name, c = int(rec["world_size"]), str(rec["algorithm"]), str(rec["collective"])
    if p < 2:
        return f"world size {p}: no message crosses a link"
    if p > max_ranks:
        return f"world size {p}: over {max_ranks} ranks, too many to evaluate per schedule"
    try:
        alg = get_algorithm(c, alg_name)
    except UnknownName:
        return f"unknown algorithm {c}/{alg_name}"
    if alg.is_vendor:
        return "vendor call"
    placed = placed_of(p, rec.get("ranks_per_node"))
    item = ITEMSIZE.get(str(rec.get("dtype")), 4)
    root = rec.get("root")
    pr = Problem(placed.topology, int(rec["count"]), item, c, int(root) if root == root and
                 root is not None else 0)
    try:
        comp, atoms, count = schedule_job(alg, pr)
    except ValueError as e:
        return str(e).splitlines()[0]
    multi = any(st.src.size and np.any(np.arange(st.src.size) - st.first > 0) for st in comp.steps)
    reduces = any(st.reduce.any() for st in comp.steps)
    hot = any(st.hot_msg.size for st in comp.steps)
    return Point(c, alg_name, p, int(rec["nbytes"]), float(rec.get("time_us_median", 0)) / 1e6,
                 placed, comp, atoms, count, item, bool(multi), bool(reduces), bool(hot))


def prepared(points: Sequence[Point]) -> list[tuple[list[int], Prepared, Placed]]:
    """The points grouped by compiled schedule, each group prepared once for every fit step."""
    groups: dict[tuple[int, int, int, int], list[int]] = {}
    for i, pt in enumerate(points):
        key = (id(pt.comp), id(pt.placed), pt.itemsize, i if pt.atoms is not None else -1)
        groups.setdefault(key, []).append(i)
    out = []
    for idx in groups.values():
        pt = points[idx[0]]
        out += [([idx[j] for j in sub], prep, pt.placed) for sub, prep in
                batches(pt.comp, pt.placed, [points[i].count for i in idx], pt.itemsize, pt.atoms)]
    return out


def model_times(points: Sequence[Point], profile: Profile,
                batches: list[tuple[list[int], Prepared, Placed]] | None = None) -> np.ndarray:
    """The modelled time of every point, the sizes of one compiled schedule in one batch."""
    out = np.empty(len(points))
    for idx, prep, placed in batches if batches is not None else prepared(points):
        out[idx] = run(prep, Net(placed, profile))
    return out


@dataclass(frozen=True)
class Fit:
    profile: Profile
    fitted: list[str]
    fixed: dict[str, str]  # parameter -> why it was not fitted
    errors: np.ndarray  # relative errors per point
    at_bound: dict[str, str] = field(default_factory=dict)  # parameter -> "upper bound 1e+12 B/s"


def _params(points: Sequence[Point]) -> tuple[list[str], dict[str, str]]:
    classes = sorted({c for pt in points for c in pt.placed.classes_used()},
                     key=["intra", "inter", "spine"].index)
    names = [f"{c}.{k}" for c in classes if c != "spine" for k in ("alpha", "beta")]
    fixed = {f"{c}.{k}": "no run crossed this link class" for c in ("intra", "inter", "spine")
             for k in ("alpha", "beta") if f"{c}.{k}" not in names}
    if any(pt.reduces for pt in points):
        names.append("gamma")
    else:
        fixed["gamma"] = "no measured algorithm reduces"
    if not any(pt.hot for pt in points):
        fixed["hot"] = "no measured algorithm sends what it wrote earlier in the call"
    elif any(pt.hot != pt.reduces for pt in points):
        names.append("hot")
    else:  # e.g. all_reduce alone at p = 2: every reduced byte is sent once more, hot
        fixed["hot"] = ("set to 0: not separable from γ (every measured algorithm that reduces "
                        "sends what it wrote, and only those do); γ carries it")
    if any(pt.multi for pt in points):
        names.append("overhead")
    else:
        fixed["overhead"] = ("set to 0: no rank posts two messages in one step, so o is not "
                             "separable from α; each fitted α is the whole per-message cost α + o")
    return names, fixed


def value_of(profile: Profile, name: str) -> float:
    """A fitted parameter's value: ``gamma``, ``overhead``, ``hot``, ``intra.alpha``, ..."""
    cls, _, k = name.rpartition(".")
    return float(getattr(profile.links[cls] if cls else profile, k))


def with_values(profile: Profile, names: Sequence[str], values: Sequence[float]) -> Profile:
    links, flat = dict(profile.links), {}
    for name, v in zip(names, values):
        cls, _, k = name.rpartition(".")
        if cls:
            links[cls] = replace(links[cls], **{k: float(v)})
        else:
            flat[k] = float(v)
    return replace(profile, links=links, **flat)


def fit(points: Sequence[Point], base: Profile | None = None,
        held: Sequence[str] = (), bounds: dict[str, tuple[float, float]] = BOUNDS) -> Fit:
    """Least-squares fit of the parameters the points can see, from ``base`` (which also fills
    what they cannot see); ``held``: parameters kept at ``base``'s values."""
    if not points:
        raise CalibrationError("no measured points to fit")
    start = base or DEFAULT
    start = replace(start, links={**DEFAULT.links, **start.links})  # a start for every class
    names, fixed = _params(points)
    names = [n for n in names if n not in held]
    fixed = {n: why for n, why in fixed.items() if n not in held}
    if "overhead" in fixed:  # not separable: α carries it, a base's o is not kept
        start = replace(start, overhead=0.0)
    if "overhead" in names and start.overhead <= 0:
        start = replace(start, overhead=1e-7)
    if "gamma" in names and start.gamma <= 0:
        start = replace(start, gamma=1e-11)
    if "hot" in names and start.hot <= 0:  # start where it is visible: half a clean byte
        start = replace(start, hot=0.5 / min(v.beta for v in start.links.values()))
    keep = {c for c in start.links if base is not None and c in base.links}
    if not names:  # everything the points see is held: nothing left to fit
        prof = replace(start, links={c: v for c, v in start.links.items() if c in keep})
        return Fit(prof, [], fixed, model_times(points, prof) / np.array(
            [pt.measured for pt in points]) - 1.0)
    if len(points) < len(names) + 1:
        raise CalibrationError(f"{len(points)} measured points for {len(names)} parameters "
                               f"({', '.join(names)}): need at least {len(names) + 1}")
    lo, hi = np.log([bounds[n.split(".")[-1]] for n in names]).T
    with np.errstate(divide="ignore"):
        x0 = np.clip(np.log([value_of(start, n) for n in names]), lo + 1e-6, hi - 1e-6)
    batches = prepared(points)
    meas = np.array([pt.measured for pt in points])

    def residuals(x: np.ndarray) -> np.ndarray:
        prof = with_values(start, names, np.exp(x))
        model = model_times(points, prof, batches)
        return np.concatenate(((model - meas) / meas, PRIOR * (x - x0)))

    sol = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.05,
                        method="trf", diff_step=1e-4, max_nfev=200 * (len(names) + 1))
    prof = with_values(start, names, np.exp(sol.x))
    used = {n.split(".")[0] for n in names if "." in n}
    prof = replace(prof, links={c: v for c, v in prof.links.items() if c in used or c in keep})
    errs = model_times(points, prof, batches) / meas - 1.0
    at_bound = {n: f"{side} bound {np.exp(b):.3g} {UNITS[n.split('.')[-1]]}"
                for n, x, lo_n, hi_n in zip(names, sol.x, lo, hi)
                for side, b in (("lower", lo_n), ("upper", hi_n)) if abs(x - b) < 1e-3}
    return Fit(prof, names, fixed, errs, at_bound)


def summary(errors: np.ndarray, points: Sequence[Point], min_bytes: int = 64 * 1024) -> dict[str, Any]:
    """|relative error| of the fitted model over the points, in percent (1213: 13 times off)."""
    big = np.array([abs(e) for e, pt in zip(errors, points) if pt.nbytes >= min_bytes])
    a = np.abs(errors)
    return {"points": len(points), "median_abs_error_pct": _r(100 * np.median(a)),
            "worst_abs_error_pct": _r(100 * a.max()),
            "median_abs_error_pct_ge_64KiB": _r(100 * np.median(big)) if big.size else None}


def pct(x: float) -> str:
    """A relative error as a percentage for people: 12.13 -> '1213 %', 0.0234 -> '2.3 %'."""
    v = 100 * abs(x)
    return f"{v:.0f} %" if v >= 10 else f"{v:.1f} %"


def _r(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else float("nan")
