"""Link probe: the node x node matrices as heatmaps, and the slow nodes and links flagged, then
confirmed or cleared (:mod:`bench.probe.verdict`)."""

from __future__ import annotations

from typing import Any

from bench.probe.confirm import Confirm
from bench.probe.matrix import class_summary, missing_pairs, node_count, node_matrix, probe_records
from bench.probe.outliers import node_names, tests, z_for
from bench.probe.summary import CLEARED, Finding, findings
from bench.units import format_size
from reports.data import ReportData, Run
from reports.heatmap import heatmap
from reports.sections import Options, Section, per_run, section
from reports.svg import later

DEFAULT_THRESHOLD = Confirm.threshold  # a probe scenario's default


def _threshold(run: Run) -> float:
    t = run.scenario.get("threshold")
    return float(t) if isinstance(t, (int, float)) and t > 0 else DEFAULT_THRESHOLD


def _run(run: Run, opts: Options) -> dict[str, Any] | None:
    df = run.records[run.records["kind"] == "probe"]
    if df.empty:
        return None
    every = df.to_dict("records")
    recs = probe_records(every)
    if not recs:  # the confirmation pass's records alone: no tournament to show
        return None
    sizes = sorted({int(r["nbytes"]) for r in recs})
    small, large = sizes[0], sizes[-1]
    names = node_names(recs)
    nodes = node_count(recs)
    several_hosts = len({h for _, _, h in names.values()}) > 1
    labels = [f"{n} {names[n][2] if n in names else '?'}" if several_hosts else str(n)
              for n in range(nodes)]
    missing = [{"size": format_size(n), "missing": m, "total": t}
               for n in sorted({small, large}) for m, t in [missing_pairs(recs, n)] if m]
    threshold = _threshold(run)
    z = z_for(tests(recs))
    found = findings(every, threshold, z)
    emulation = run.first("probe", "emulation")
    return {
        "label": run.label, "pairs": len({(r["src"], r["dst"]) for r in recs}),
        "ranks": int(df["world_size"].max()), "nodes": nodes, "missing": missing,
        "layout": run.first("probe", "layout"), "repeats": run.first("probe", "repeats"),
        "window": run.first("probe", "window"), "timer": run.first("probe", "timer"),
        "emulation": emulation if isinstance(emulation, dict) else None,
        "oversubscribed": bool(df["oversubscribed"].any()),
        "classes": [{**r, "size": format_size(r["nbytes"])} for r in class_summary(recs)],
        "latency": later(heatmap, node_matrix(recs, "latency_us_median", small), labels,
                         f"One-way latency at {format_size(small)}, median over pairs [{run.label}]",
                         "µs", False),
        "bandwidth": later(heatmap, node_matrix(recs, "uni_gbps", large), labels,
                           f"Unidirectional bandwidth at {format_size(large)}, median over pairs "
                           f"[{run.label}]", "GB/s", True),
        "small": format_size(small), "large": format_size(large),
        "threshold": threshold, "z": z,
        "flagged": [_row(o, f) for f in found for o in f.flags][: opts.max_rows],
        "named": [f.name for f in found if f.named],
        "cleared": [f.name for f in found if f.status == CLEARED],
        "retests": [_retest(f, t) for f in found if f.verdict for t in f.verdict.retests]
        [: opts.max_rows],
        "confirm_z": next((f.verdict.z for f in found if f.verdict), None),
        "confirm": _confirm(run),
        "explained": len({k for f in found if f.named for k in f.explained}),
    }


def _confirm(run: Run) -> dict[str, Any] | None:
    sc = run.scenario
    if not sc.get("confirm_max"):
        return None
    return {k: sc.get(f"confirm_{k}") for k in ("max", "blocks", "repeats")}


def _row(o: Any, f: Finding) -> dict[str, Any]:
    return {"name": o.name, "cls": o.link_class, "measurement": o.measurement,
            "size": format_size(o.nbytes), "nbytes": o.nbytes, "excess": 100 * o.excess,
            "noise": 100 * o.noise, "value": o.value_us, "reference": o.reference_us,
            "status": f.status, "named": f.named}


def _retest(f: Finding, t: Any) -> dict[str, Any]:
    assert f.verdict is not None
    v = f.verdict
    return {"name": f.name, "pair": f"{v.pair[0]}-{v.pair[1]}",
            "reference_pair": f"{v.reference[0]}-{v.reference[1]}", "cls": v.link_class,
            "measurement": t.measurement, "size": format_size(t.nbytes), "nbytes": t.nbytes,
            "excess": 100 * t.excess, "noise": 100 * t.noise,
            "blocks": " / ".join(f"{100 * e:+.0f}" for e in t.block_excess),
            "value": t.value_us, "reference": t.reference_us, "slow": t.slow,
            "status": f.status}


@section("probe", 80)
def build(data: ReportData, opts: Options) -> Section | None:
    return per_run(data, "probe", "Link probe", "probe.html.j2", lambda r: _run(r, opts))
