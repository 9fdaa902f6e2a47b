"""α and β per link class from probe records, for ``commbench calibrate`` (medians over pairs, so a
slow link or node moves nothing; the rule: docs/probe.md, "Calibrating from a probe").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.probe.matrix import CLASS_ORDER, probe_records
from bench.units import format_size

BETA_MIN_BYTES = 64 << 10


@dataclass(frozen=True)
class ProbeFit:
    values: dict[str, float]  # "inter.alpha" -> seconds, "inter.beta" -> bytes/s
    details: dict[str, dict[str, Any]]  # per parameter: how it was taken
    not_fitted: dict[str, str]  # per parameter the probe could not give: why


def fit_probe(records: Sequence[Mapping[str, Any]]) -> ProbeFit:
    """α and β of every class the probe crossed (rule: module doc)."""
    by_class: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in probe_records(records):
        by_class[str(r["link_class"])].append(r)
    values: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    not_fitted: dict[str, str] = {}
    for cls, recs in sorted(by_class.items(), key=lambda kv: CLASS_ORDER.index(kv[0])):
        sizes = sorted({int(r["nbytes"]) for r in recs})
        small, large = sizes[0], sizes[-1]
        beta = None
        if large >= BETA_MIN_BYTES:
            bw = [float(r["uni_gbps"]) * 1e9 for r in recs if int(r["nbytes"]) == large]
            beta = float(np.median(bw))
            values[f"{cls}.beta"] = beta
            details[f"{cls}.beta"] = {
                "value": beta, "pairs": len(bw), "nbytes": large,
                "how": f"median over pairs of the unidirectional bandwidth at {format_size(large)}"}
        else:
            not_fitted[f"{cls}.beta"] = (f"the probe's largest size {format_size(large)} is under "
                                         f"{format_size(BETA_MIN_BYTES)}: latency-bound")
        lat = [float(r["latency_us_median"]) * 1e-6 for r in recs if int(r["nbytes"]) == small]
        alpha = max(0.0, float(np.median(lat)) - (small / beta if beta else 0.0))
        values[f"{cls}.alpha"] = alpha
        details[f"{cls}.alpha"] = {
            "value": alpha, "pairs": len(lat), "nbytes": small,
            "how": f"median over pairs of the one-way latency at {format_size(small)}"
                   + (" less its transfer time at beta" if beta else "")}
    return ProbeFit(values, details, not_fitted)


def residuals(records: Sequence[Mapping[str, Any]], fit: ProbeFit) -> dict[str, Any]:
    """How far the pairs lie from their class's α and β: |relative deviation| median and worst."""
    dev = []
    for r in probe_records(records):
        cls, n = str(r["link_class"]), int(r["nbytes"])
        a, b = fit.values.get(f"{cls}.alpha"), fit.values.get(f"{cls}.beta")
        d = fit.details.get(f"{cls}.alpha")
        if a is not None and d is not None and n == d["nbytes"] and a > 0:
            dev.append(float(r["latency_us_median"]) * 1e-6 / (a + (n / b if b else 0.0)) - 1.0)
        d = fit.details.get(f"{cls}.beta")
        if b is not None and d is not None and n == d["nbytes"]:
            dev.append(b / (float(r["uni_gbps"]) * 1e9) - 1.0)
    a = np.abs(np.array(dev)) if dev else np.array([np.nan])
    return {"pair_values": len(dev), "median_abs_rel_deviation": float(f"{np.median(a):.4g}"),
            "worst_abs_rel_deviation": float(f"{a.max():.4g}")}
