"""``commbench calibrate``'s work: runs in, points out, a fitted profile written as YAML."""

from __future__ import annotations

import argparse
import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from bench.argtypes import UsageError
from bench.costmodel import copybw, eager
from bench.costmodel.calibrate import (
    DEFAULT,
    POOR_FIT,
    UNITS,
    CalibrationError,
    Fit,
    Point,
    fit,
    pct,
    placed_of,
    point,
    summary,
    value_of,
    with_values,
)
from bench.costmodel.net import Net
from bench.costmodel.predict import estimate_case
from bench.costmodel.profile import MPI_KEYS, Profile, ProfileError, load_profile, save_profile
from bench.probe.fit import ProbeFit, fit_probe
from bench.probe.fit import residuals as probe_residuals
from bench.probe.matrix import probe_records
from bench.store.records import StoreError, load_results, read_meta
from kernels.algorithm import Problem, algorithms_of
from kernels.ops import ITEMSIZE


@dataclass(frozen=True)
class Loaded:
    """What the runs hold for a calibration."""

    recs: list[dict[str, Any]]  # measured collective records
    probe: list[dict[str, Any]]  # probe records
    predicted: dict[str, int]  # run -> predicted records (never fitted)


def _load(runs: Sequence[Path]) -> Loaded:
    """The usable measured and probe records of ``runs``; predicted records are counted, not
    kept: a prediction fitted would only give back the profile that made it."""
    recs: list[dict[str, Any]] = []
    probe: list[dict[str, Any]] = []
    predicted: dict[str, int] = {}
    for run in runs:
        read_meta(run)  # StoreError: not a run
        df = load_results(run, samples=False)
        if df.empty:
            continue
        for rec in df.to_dict("records"):
            flag = rec.get("predicted")  # missing: None or NaN, as a table gives it back
            if flag is not None and flag == flag and bool(flag):
                predicted[str(run)] = predicted.get(str(run), 0) + 1
            elif rec.get("kind") == "probe":
                if rec.get("status") == "ok":
                    probe.append({**rec, "_run": str(run)})
            elif (rec.get("kind", "collective") == "collective" and rec.get("status") == "ok"
                  and rec.get("time_us_median") == rec.get("time_us_median")
                  and (rec.get("time_us_median") or 0) > 0):
                recs.append({**rec, "_run": str(run)})
    return Loaded(recs, probe, predicted)


def _points(recs: Sequence[dict[str, Any]]) -> tuple[list[Point], dict[str, int]]:
    """The fitting points of ``recs``, and per reason how many records are not one."""
    got = [point(r) for r in recs]
    return [g for g in got if isinstance(g, Point)], Counter(g for g in got if isinstance(g, str))


def native_curves(recs: Sequence[dict[str, Any]], profile: Profile) -> dict[str, Any]:
    """Per collective and vendor call, at each measured world size (on the run's largest nodes
    at that size): measured time over the fastest modelled schedule, per size, of the median
    (``points``) and of the mean (``mean_points``: what ``advise`` sums a step's calls at; on a
    shared CPU host a call's time is heavy-tailed). The entry's own points are its largest world
    size's; ``by_world_size`` holds every one."""
    out: dict[str, Any] = {}
    vendor = [r for r in recs if str(r["algorithm"]).startswith("native") and r["world_size"] >= 2]
    for c, name in sorted({(str(r["collective"]), str(r["algorithm"])) for r in vendor}):
        mine = [r for r in vendor if r["collective"] == c and r["algorithm"] == name]
        curves = {}
        for p in sorted({int(r["world_size"]) for r in mine}):
            curve = _curve(c, [r for r in mine if int(r["world_size"]) == p], p, profile)
            if curve is not None:
                curves[p] = curve
        if curves:
            top = max(curves)
            out.setdefault(c, {})[name] = {
                "world_size": top, **curves[top],
                "reference": "the fastest modelled schedule of the collective",
                "by_world_size": {str(p): v for p, v in curves.items()}}
    return out


def _curve(c: str, recs: Sequence[dict[str, Any]], p: int, profile: Profile) -> dict[str, Any] | None:
    placed = [(r, placed_of(p, r.get("ranks_per_node"))) for r in recs]
    rpn = max(pl.node_sizes[0] for _, pl in placed)
    pts: dict[int, list[float]] = {}
    means: dict[int, list[float]] = {}
    for r, pl in placed:
        if pl.node_sizes[0] != rpn:
            continue
        pr = Problem(pl.topology, int(r["count"]), ITEMSIZE.get(str(r["dtype"]), 4), c, 0)
        net = Net(pl, profile)
        best = [e for a in algorithms_of(c) if not a.is_vendor
                for e in [estimate_case(a, pr, net)] if not isinstance(e, str)]
        if best:
            t = min(e.time_s for e in best)
            pts.setdefault(int(r["nbytes"]), []).append(r["time_us_median"] / 1e6 / t)
            if isinstance(r.get("time_us_mean"), (int, float)):
                means.setdefault(int(r["nbytes"]), []).append(r["time_us_mean"] / 1e6 / t)
    if not pts:
        return None
    return {"ranks_per_node": rpn, "points": _medians(pts),
            **({"mean_points": _medians(means)} if means else {})}


def _medians(by_size: dict[int, list[float]]) -> list[list[float]]:
    return [[n, float(f"{sorted(v)[len(v) // 2]:.4g}")] for n, v in sorted(by_size.items())]


def calibrate_command(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    def fail(msg: str) -> NoReturn:
        raise UsageError(msg, "calibrate")

    runs = ", ".join(map(str, args.runs))
    try:
        base = load_profile(args.base) if args.base else None
        got = _load(args.runs)
    except (StoreError, ProfileError) as e:
        return fail(str(e).splitlines()[0])
    if getattr(args, "fabric", False):
        return _fabric(args, base, got, say)
    points, why = _points(got.recs)
    notes = [f"calibrate: {n} predicted records of {run} not used: a prediction is never fitted"
             for run, n in got.predicted.items()]
    notes += [f"calibrate: {n} records not used: {reason}" for reason, n in sorted(why.items())]
    if not points and not got.probe:
        return fail(f"{runs}: no measured points to fit{_missing(got, why)}")
    probe = fit_probe(got.probe) if got.probe else None
    start = with_probe(base, probe) if probe is not None else base
    copy = copybw.measured(args.runs)
    if copy is not None:  # this host's copies, measured: better than a base's nominal figure
        start = replace(start or DEFAULT,
                        device={**(start.device if start else {}), **copy.device()})
    start, switch = _switch(args, got.probe, start)
    if not points:
        assert start is not None and probe is not None
        result = Fit(start, [], _not_fitted(start, probe), np.array([]))
    else:
        try:
            result = fit(points, start)
        except CalibrationError as e:
            return fail(f"{runs}: {e}")
    prof = _finish(args, result, points, got.recs, base, probe, got.probe, copy)
    if switch is not None:
        prof = replace(prof, fitted=_with_switch(prof.fitted or {}, switch))
    save_profile(prof, args.output, header=f"# fitted by commbench calibrate from {runs}\n")
    for line in notes:
        say(line)
    if probe is not None:
        say(f"calibrate: from {len(got.probe)} probe records: "
            + ", ".join(f"{k} {v:.4g}" for k, v in sorted(probe.values.items())))
    for k, (was, now) in sorted(_moved(result, probe).items()):
        say(f"calibrate: the sweep moved {k} from the probe's {was:.3g} to {now:.3g} "
            f"{UNITS[k.split('.')[-1]]}: were the probe and the sweep run alike (ranks per "
            f"core, load)?")
    if start is not None and start.overhead > 0 and "overhead" in result.fixed and points:
        say(f"calibrate: o {start.overhead:.3g} s of {start.name} not kept: "
            f"{result.fixed['overhead']}")
    if switch is not None:
        say(f"calibrate: {_said(switch)}")
    for k, b in result.at_bound.items():
        say(f"calibrate: {k} is at its {b}: the runs do not pin it within the plausible range")
    if points:
        a = np.abs(result.errors)
        say(f"calibrate: {len(points)} points, fitted {', '.join(result.fitted) or 'nothing more'}; "
            f"|error| median {pct(float(np.median(a)))}, worst {pct(float(a.max()))}")
        if np.median(a) > POOR_FIT:
            bound = f"; at a bound: {', '.join(result.at_bound)}" if result.at_bound else ""
            say(f"calibrate: warning: poor fit: median |error| {pct(float(np.median(a)))} over "
                f"{len(points)} points (above {pct(POOR_FIT)}){bound}: {args.output} does not "
                f"model {runs}")
    print(args.output)
    return 0


def _fabric(args: argparse.Namespace, base: Profile | None, got: Loaded,
            say: Callable[[str], None]) -> int:
    """``--fabric``: the base's fabric refitted on the runs' vendor all_reduce curves."""
    from bench.costmodel.fabric_fit import errors, fit_profile, points_from_records

    if base is None or base.fabric is None:
        raise UsageError("--fabric needs --base, a profile with a fabric (e.g. h100-ib400)",
                         "calibrate")
    pts = points_from_records(got.recs)
    if not pts:
        raise UsageError(f"{', '.join(map(str, args.runs))}: no native all_reduce records on "
                         "equal nodes to fit the fabric on", "calibrate")
    try:
        prof = fit_profile(base, pts)
    except ValueError as e:
        raise UsageError(str(e).splitlines()[0], "calibrate") from None
    prof = replace(prof, name=args.name or args.output.stem)
    save_profile(prof, args.output)
    fitted = (prof.fitted or {}).get("fabric", {})
    err = sorted(abs(e) for e in errors(prof, pts))
    say(f"calibrate: fabric fitted on {len(pts)} points: "
        + ", ".join(f"{k} {v}" for k, v in fitted.items())
        + f"; |error| median {err[len(err) // 2]:.1%}, worst {err[-1]:.1%}")
    print(args.output)
    return 0


def _switch(args: argparse.Namespace, probe_recs: Sequence[dict[str, Any]],
            start: Profile | None) -> tuple[Profile | None, dict[str, Any] | None]:
    """``start`` with the MPI switch the probe's ping-pong shows (and its class's α, β from the
    same fit), or without one; and what the profile's ``fitted`` says about it (None: nothing)."""
    if getattr(args, "no_mpi_switch", False):
        why = "--no-mpi-switch: alpha-beta only"
        return (replace(start, mpi=None) if start else None), {"why": why}
    got = eager.from_probe(probe_records(probe_recs))
    if got is None or start is None:
        return start, None
    cls, sw = got
    runs = sorted({str(r["_run"]) for r in probe_recs})
    how = {"link_class": cls, "runs": runs, "measured": "probe ping-pong one-way latency "
           "(half a round trip), median per pair and size", **sw.how}
    if sw.mpi is None and not sw.tested and start.mpi is not None:  # the probe cannot tell
        return start, {**how, "why": f"{how['why']}; the base's switch kept"}
    if sw.mpi is None:
        return replace(start, mpi=None), how
    alpha, beta = (float(f"{x:.6g}") for x in (sw.alpha, sw.beta))
    how["link"] = {"alpha_s": alpha, "beta_bytes_per_s": beta,
                   "how": f"{cls} alpha, beta from the same fit (they replace the probe's)"}
    return (replace(with_values(start, [f"{cls}.alpha", f"{cls}.beta"], [alpha, beta]),
                    mpi=sw.mpi), how)


def _with_switch(fitted: dict[str, Any], how: dict[str, Any]) -> dict[str, Any]:
    """``fitted`` with the switch's account: its keys among the parameters, or why not."""
    if "why" in how:
        return {**fitted, "not_fitted": {**fitted.get("not_fitted", {}), "mpi": how["why"]},
                "mpi": how}
    keys = [f"mpi.{k}" for k in MPI_KEYS]
    return {**fitted, "parameters": [*fitted.get("parameters", []), *keys], "mpi": how}


def _said(how: dict[str, Any]) -> str:
    """The closing note's line about the switch."""
    if "why" in how:
        return f"no MPI eager/rendezvous switch: {how['why']}"
    return (f"MPI switch from {how['points']} ping-pong points ({how['link_class']}): eager limit "
            f"{how['best_limit_bytes']} B, rendezvous {how['rendezvous_s']:.3g} s, eager copy "
            f"{how['eager_s_per_byte']:.3g} s/B (p = {how['p_bonferroni']:.2g})")


def _missing(got: Loaded, why: dict[str, int]) -> str:
    """What the runs held instead of measured points, for the one-line refusal."""
    parts = [f"{n} predicted records, never fitted" for n in
             [sum(got.predicted.values())] if n]
    parts += [f"{n} records: {reason}" for reason, n in sorted(why.items())]
    return f" ({'; '.join(parts)})" if parts else " (no measured collective or probe records)"


def _moved(result: Fit, probe: ProbeFit | None, factor: float = 2.0) -> dict[str, tuple[float, float]]:
    """The probe's values the sweep refitted to more than ``factor`` times away: (probe, fit)."""
    if probe is None:
        return {}
    out = {}
    for k, v in probe.values.items():
        if k in result.fitted:
            got = value_of(result.profile, k)
            if v <= 0 or not 1 / factor <= got / v <= factor:
                out[k] = (v, got)
    return out


def with_probe(base: Profile | None, probe: ProbeFit) -> Profile:
    """``base`` (or the calibration's default start) with the probe's α and β in its links."""
    start = base or replace(DEFAULT, links={}, gamma=0.0, overhead=0.0)
    probed = {name.split(".")[0]: DEFAULT.links[name.split(".")[0]] for name in probe.values}
    return with_values(replace(start, links={**probed, **start.links}), list(probe.values),
                       list(probe.values.values()))


def _not_fitted(prof: Profile, probe: ProbeFit) -> dict[str, str]:
    out = dict(probe.not_fitted)
    for cls in prof.links:
        for k in ("alpha", "beta"):
            if f"{cls}.{k}" not in probe.values:
                out.setdefault(f"{cls}.{k}", "not crossed by the probe")
    out["gamma"] = "a probe does not reduce and no sweep was given"
    out["overhead"] = "a probe posts one message at a time and no sweep was given"
    out["hot"] = "a probe sends only what it did not write and no sweep was given"
    return out


def _finish(args: argparse.Namespace, result: Fit, points: Sequence[Point],
            recs: Sequence[dict[str, Any]], base: Profile | None, probe: ProbeFit | None = None,
            probe_recs: Sequence[dict[str, Any]] = (),
            copy: copybw.CopyBandwidth | None = None) -> Profile:
    prof = result.profile
    name = args.name or Path(args.output).stem
    fitted = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": [str(r) for r in args.runs], "base": base.path if base else None,
        "parameters": list(dict.fromkeys([*(sorted(probe.values) if probe else []),
                                          *result.fitted])),
        "not_fitted": result.fixed,
        "method": "scipy least_squares, soft-L1 loss (f_scale 0.05) on (model - measured) / "
                  "measured of median times, parameters in log space within plausible bounds "
                  "(bench/costmodel/calibrate.py BOUNDS)" if points else None,
        "residuals": summary(result.errors, points) if points else None,
        "algorithms": sorted({f"{pt.collective}/{pt.algorithm}" for pt in points}),
        "world_sizes": sorted({pt.world for pt in points}),
    }
    if result.at_bound:
        fitted["at_bound"] = dict(result.at_bound)
    if copy is not None:
        fitted["copy_bandwidth"] = copy.describe()
    if probe is not None:
        fitted["probe"] = {
            "runs": sorted({str(r["_run"]) for r in probe_recs}),
            "parameters": {k: {**d, "value": float(f"{d['value']:.6g}"),
                               **({"refitted_by_sweep": float(f"{value_of(prof, k):.6g}")}
                                  if k in result.fitted else {})}
                           for k, d in sorted(probe.details.items())},
            "method": "medians over pairs (bench/probe/fit.py); the sweep's fit starts from them "
                      "and refits the classes its points cross",
            "residuals": probe_residuals(probe_recs, probe)}
    src = (f"fitted to {len(points)} measured points from {', '.join(map(str, args.runs))}"
           if points else "")
    if probe is not None:
        classes = ", ".join(dict.fromkeys(k.split(".")[0] for k in probe.values))
        src = "; ".join(x for x in (f"alpha, beta of {classes} from {len(probe_recs)} probe "
                                    "records" + (" (the start)" if points else ""), src) if x)
    prof = replace(prof, name=name, path=str(args.output), fitted=fitted,
                   source=src + (f"; the rest from {base.name}" if base else ""),
                   device={**(base.device if base else {}),
                           **(copy.device() if copy else {})},
                   nics_per_node=base.nics_per_node if base else 1)
    return replace(prof, native=native_curves(recs, prof))
