"""Fit a profile's fabric on measured or published curves (busbw per size on a topology), for
``predict`` to extrapolate to larger clusters: the parameters a curve can tell (the ring's share
of the device port; the NICs' achievable fraction) are refitted, by least squares on
log(predicted / measured) busbw, everything else kept from the base profile (docs/predict.md,
"Calibrate on few, predict many")."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench.costmodel.model import Cluster, parse_topology
from bench.costmodel.profile import Profile
from bench.costmodel.vendor.choose import choose
from bench.measure import metrics

PARAMETERS = ("ring_efficiency", "nic_efficiency")


@dataclass(frozen=True)
class Point:
    cluster: Cluster
    collective: str
    nbytes: int
    busbw_gbps: float  # measured


def errors(prof: Profile, points: Sequence[Point]) -> list[float]:
    """Predicted / measured - 1 of each point's busbw on ``prof``."""
    assert prof.fabric is not None
    out = []
    for pt in points:
        placed = pt.cluster.place(pt.cluster.world)
        c = choose(placed, prof.fabric, pt.collective, pt.nbytes)
        if isinstance(c, str):
            raise ValueError(f"fabric fit: {c}")
        out.append(metrics.busbw_gbps(pt.collective, placed.world, pt.nbytes, c.time_s)
                   / pt.busbw_gbps - 1)
    return out


def _loss(prof: Profile, points: Sequence[Point]) -> float:
    return sum(math.log1p(e) ** 2 for e in errors(prof, points))


def _golden(f, lo: float, hi: float, steps: int = 40) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    for _ in range(steps):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(c) <= f(d):
            b = d
        else:
            a = c
    return (a + b) / 2


def fit_profile(base: Profile, points: Sequence[Point],
                parameters: Sequence[str] = PARAMETERS) -> Profile:
    """``base`` with its fabric's efficiencies (``parameters``, each in (0, 1]) fitted on
    ``points``, one at a time in turn (two rounds): the fitted profile's ``fitted`` block
    names them."""
    unknown = sorted(set(parameters) - set(PARAMETERS))
    if unknown:
        raise ValueError(f"fabric fit: unknown parameter {unknown[0]!r} (valid: "
                         f"{', '.join(PARAMETERS)})")
    if base.fabric is None:
        raise ValueError(f"fabric fit: profile {base.name!r} has no fabric")
    if not points:
        raise ValueError("fabric fit: no points to fit on")
    prof = base
    fitted: dict[str, float] = {}
    for _ in range(2 if len(parameters) > 1 else 1):
        for key in parameters:

            def at(x: float, key: str = key, now: Profile = prof) -> Profile:
                assert now.fabric is not None
                return replace(now, fabric=replace(now.fabric, **{key: x}))

            x = _golden(lambda v: _loss(at(v), points), 0.05, 1.0)
            prof, fitted[key] = at(x), x
    yaml = dict(base.fabric_yaml)
    if "ring_efficiency" in fitted:
        yaml["ring_efficiency"] = round(fitted["ring_efficiency"], 4)
    if "nic_efficiency" in fitted:
        yaml["nics"] = {**(yaml.get("nics") or {}), "efficiency": round(fitted["nic_efficiency"], 4)}
    return replace(prof, name=f"{base.name}-fitted", fabric_yaml=yaml,
                   fitted={**(base.fitted or {}), "fabric": {k: round(v, 4) for k, v in fitted.items()},
                           "fabric_points": len(points)})


def points_from_records(recs: Iterable[dict[str, Any]]) -> list[Point]:
    """The vendor all_reduce curves of measured collective records (``native``, equal nodes):
    one point per (nodes, ranks per node, size), the median busbw of its records."""
    by: dict[tuple[int, int, int], list[float]] = {}
    for r in recs:
        rpn, nodes = r.get("ranks_per_node"), r.get("nodes")
        if (r.get("collective") != "all_reduce" or not str(r.get("algorithm", "")).startswith(
                "native") or not rpn or not nodes or rpn != rpn or nodes != nodes
                or not (r.get("busbw_gbps") or 0) > 0):
            continue
        by.setdefault((int(nodes), int(rpn), int(r["nbytes"])), []).append(float(r["busbw_gbps"]))
    return [Point(parse_topology(f"{n}x{rpn}"), "all_reduce", nb, statistics.median(v))
            for (n, rpn, nb), v in sorted(by.items())]
