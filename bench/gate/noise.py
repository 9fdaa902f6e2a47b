"""Run-to-run noise from several baseline runs: the variance of the log of each run's median,
pooled per group of keys into ``sigma``; the floor a current run must exceed is
``exp(t(1 - run_alpha, dof) * sigma * sqrt(1 + 1/k)) - 1`` (k baselines). docs/compare.md,
"Several baselines"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.gate.decide import Rule
from bench.gate.keys import KEY, Case, Key
from bench.gate.reference import relative, round_median

_FREE = tuple(KEY.index(f) for f in ("algorithm", "strategy"))


@dataclass(frozen=True)
class Noise:
    """Between-run noise of one group: log-scale ``sigma`` with ``dof`` degrees of freedom, and
    the ``floor`` effect that a current run compared with ``runs`` baselines must exceed."""

    sigma: float
    dof: int
    runs: int
    floor: float


def group_of(key: Key) -> Key:
    """The key with algorithm and strategy blanked: cases measured under the same conditions."""
    return tuple(None if i in _FREE else v for i, v in enumerate(key))


def run_median(case: Case, run: Mapping[Key, Case], rule: Rule) -> float | None:
    """The case's median in the gated mode (relative to native with ``rule.reference``)."""
    if rule.reference and case.kind == "collective" and relative(case, run) is None:
        return None  # native itself, or no native beside it: not gated relative, no noise
    return round_median(case.key, run, rule.reference)


def estimate(runs: Sequence[Mapping[Key, Case]], rule: Rule) -> dict[Key, Noise]:
    """Noise per group from the baseline ``runs`` (empty with fewer than two)."""
    from scipy import stats  # imported on use: the CLI starts without scipy
    if len(runs) < 2:
        return {}
    logs: dict[Key, list[np.ndarray]] = {}  # per group: each key's log run medians
    for k in dict.fromkeys(k for r in runs for k in r):  # first-seen order: sums reproducible
        meds = [m for r in runs if k in r and (m := run_median(r[k], r, rule)) is not None]
        if len(meds) >= 2:
            logs.setdefault(group_of(k), []).append(np.log(meds))
    out = {}
    for g, per_key in logs.items():
        d = sum(len(x) - 1 for x in per_key)
        sigma = math.sqrt(sum(float(((x - x.mean()) ** 2).sum()) for x in per_key) / d)
        k = min(len(x) for x in per_key)
        t = float(stats.t.ppf(1 - rule.run_alpha, d))
        out[g] = Noise(sigma, d, k, math.expm1(t * sigma * math.sqrt(1 + 1 / k)))
    return out


def floor_of(key: Key, noise: Mapping[Key, Noise]) -> float:
    n = noise.get(group_of(key))
    return n.floor if n else 0.0
