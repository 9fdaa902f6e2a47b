"""``commbench calibrate``'s work: runs in, points out, a fitted profile written as YAML."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.probe.fit import ProbeFit, fit_probe
from bench.probe.fit import residuals as probe_residuals
from bench.records import StoreError, load_results, read_meta
from bench.topo.calibrate import (
    DEFAULT,
    CalibrationError,
    Fit,
    Point,
    fit,
    placed_of,
    point,
    summary,
)
from bench.topo.net import Net
from bench.topo.predict import estimate_case
from bench.topo.profile import Link, Profile, ProfileError, load_profile, save_profile
from kernels.algorithm import Problem, algorithms_of
from kernels.ops import ITEMSIZE


def _records(runs: Sequence[Path], kind: str = "collective") -> list[dict[str, Any]]:
    """The usable measured records of ``kind`` in ``runs``."""
    out = []
    for run in runs:
        read_meta(run)  # StoreError: not a run
        df = load_results(run, samples=False)
        if df.empty:
            continue
        for rec in df.to_dict("records"):
            if kind == "probe":
                if rec.get("kind") == "probe" and rec.get("status") == "ok":
                    out.append({**rec, "_run": str(run)})
                continue
            ok = (rec.get("kind", "collective") == "collective" and rec.get("status") == "ok"
                  and not rec.get("predicted") and rec.get("time_us_median") == rec.get(
                      "time_us_median") and (rec.get("time_us_median") or 0) > 0)
            if ok:
                out.append({**rec, "_run": str(run)})
    return out


def native_curves(recs: Sequence[dict[str, Any]], profile: Profile) -> dict[str, Any]:
    """Per collective and vendor call, at its largest measured world size: measured time over
    the fastest modelled schedule of that collective, per size."""
    out: dict[str, Any] = {}
    vendor = [r for r in recs if str(r["algorithm"]).startswith("native") and r["world_size"] >= 2]
    for c, name in sorted({(str(r["collective"]), str(r["algorithm"])) for r in vendor}):
        mine = [r for r in vendor if r["collective"] == c and r["algorithm"] == name]
        p = max(int(r["world_size"]) for r in mine)
        rpn = max(placed_of(p, r.get("ranks_per_node")).node_sizes[0] for r in mine
                  if int(r["world_size"]) == p)  # the run's largest nodes at that size
        pts: dict[int, list[float]] = {}
        for r in (r for r in mine if int(r["world_size"]) == p
                  and placed_of(p, r.get("ranks_per_node")).node_sizes[0] == rpn):
            placed = placed_of(p, r.get("ranks_per_node"))
            pr = Problem(placed.topology, int(r["count"]), ITEMSIZE.get(str(r["dtype"]), 4), c, 0)
            net = Net(placed, profile)
            best = [e for a in algorithms_of(c) if not a.is_vendor
                    for e in [estimate_case(a, pr, net)] if not isinstance(e, str)]
            if best:
                t = min(e.time_s for e in best)
                pts.setdefault(int(r["nbytes"]), []).append(r["time_us_median"] / 1e6 / t)
        if pts:
            out.setdefault(c, {})[name] = {
                "world_size": p, "ranks_per_node": rpn,
                "reference": "the fastest modelled schedule of the collective",
                "points": [[n, float(f"{sorted(v)[len(v) // 2]:.4g}")] for n, v in sorted(pts.items())]}
    return out


def calibrate_command(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    def fail(msg: str) -> int:
        say(f"commbench: calibrate: {msg}")
        return 2

    try:
        base = load_profile(args.base) if args.base else None
        recs = _records(args.runs)
        probe_recs = _records(args.runs, "probe")
    except (StoreError, ProfileError) as e:
        return fail(str(e).splitlines()[0])
    probe = fit_probe(probe_recs) if probe_recs else None
    if probe is not None:
        base = with_probe(base, probe)
    points: list[Point] = []
    why: dict[str, int] = {}
    for r in recs:
        got = point(r)
        if isinstance(got, Point):
            points.append(got)
        else:
            why[got] = why.get(got, 0) + 1
    if probe is not None and not points:
        assert base is not None
        result = Fit(base, [], _not_fitted(base, probe), np.array([]))
    else:
        try:
            result = fit(points, base, held=list(probe.values) if probe else ())
        except CalibrationError as e:
            return fail(f"{', '.join(map(str, args.runs))}: {e}")
    prof = _finish(args, result, points, recs, base if args.base or probe is None else None,
                   probe, probe_recs)
    save_profile(prof, args.output, header=f"# fitted by commbench calibrate from "
                                           f"{', '.join(map(str, args.runs))}\n")
    res = prof.fitted["residuals"] if prof.fitted else {}
    if probe is not None:
        say(f"calibrate: from {len(probe_recs)} probe records: "
            + ", ".join(f"{k} {v:.4g}" for k, v in sorted(probe.values.items())))
    if points:
        say(f"calibrate: {len(points)} points, fitted {', '.join(result.fitted) or 'nothing more'}; "
            f"|relative error| median {res.get('median_abs_rel_error')}, worst "
            f"{res.get('worst_abs_rel_error')}")
    for reason, n in sorted(why.items()):
        say(f"calibrate: {n} records not used: {reason}")
    print(args.output)
    return 0


def with_probe(base: Profile | None, probe: ProbeFit) -> Profile:
    """``base`` (or the calibration's default start) with the probe's α and β in its links."""
    start = base or replace(DEFAULT, links={}, gamma=0.0, overhead=0.0)
    links = dict(start.links)
    for name, v in probe.values.items():
        cls, k = name.split(".")
        old = links.get(cls) or DEFAULT.links[cls]
        links[cls] = Link(v, old.beta) if k == "alpha" else Link(old.alpha, v)
    return replace(start, links=links)


def _not_fitted(prof: Profile, probe: ProbeFit) -> dict[str, str]:
    out = dict(probe.not_fitted)
    for cls in prof.links:
        for k in ("alpha", "beta"):
            if f"{cls}.{k}" not in probe.values:
                out.setdefault(f"{cls}.{k}", "not crossed by the probe")
    out["gamma"] = "a probe does not reduce and no sweep was given"
    out["overhead"] = "a probe posts one message at a time and no sweep was given"
    return out


def _finish(args: argparse.Namespace, result: Fit, points: Sequence[Point],
            recs: Sequence[dict[str, Any]], base: Profile | None, probe: ProbeFit | None = None,
            probe_recs: Sequence[dict[str, Any]] = ()) -> Profile:
    prof = result.profile
    name = args.name or Path(args.output).stem
    fitted = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": [str(r) for r in args.runs], "base": base.path if base else None,
        "parameters": [*(sorted(probe.values) if probe else []), *result.fitted],
        "not_fitted": result.fixed,
        "method": "scipy least_squares, soft-L1 loss (f_scale 0.05) on (model - measured) / "
                  "measured of median times, parameters in log space" if points else None,
        "residuals": summary(result.errors, points) if points else None,
        "algorithms": sorted({f"{pt.collective}/{pt.algorithm}" for pt in points}),
        "world_sizes": sorted({pt.world for pt in points}),
    }
    if probe is not None:
        fitted["probe"] = {
            "runs": sorted({str(r["_run"]) for r in probe_recs}),
            "parameters": {k: {**d, "value": float(f"{d['value']:.6g}")}
                           for k, d in sorted(probe.details.items())},
            "method": "medians over pairs (bench/probe/fit.py); the sweep's fit holds them",
            "residuals": probe_residuals(probe_recs, probe)}
    src = (f"fitted to {len(points)} measured points from {', '.join(map(str, args.runs))}"
           if points else "")
    if probe is not None:
        classes = ", ".join(dict.fromkeys(k.split(".")[0] for k in probe.values))
        src = "; ".join(x for x in (f"alpha, beta of {classes} from {len(probe_recs)} probe "
                                    "records", src) if x)
    prof = replace(prof, name=name, path=str(args.output), fitted=fitted,
                   source=src + (f"; the rest from {base.name}" if base else ""),
                   device=dict(base.device) if base else {},
                   nics_per_node=base.nics_per_node if base else 1)
    return replace(prof, native=native_curves(recs, prof))
