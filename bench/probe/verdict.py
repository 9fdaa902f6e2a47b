"""The confirmation pass's rule: is a suspect slow again, measured alone against a reference?
The rule: docs/probe.md, "The confirmation pass"."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.probe.matrix import probe_records
from bench.probe.outliers import z_for
from bench.probe.record import MEASUREMENTS
from bench.units import format_size


@dataclass(frozen=True)
class Retest:
    measurement: str
    nbytes: int
    excess: float  # pooled: median(S) / median(R) - 1
    noise: float  # relative
    block_excess: tuple[float, ...]
    value_us: float  # median(S)
    reference_us: float  # median(R)
    slow: bool


@dataclass(frozen=True)
class Verdict:
    check: int
    name: str
    what: str  # node | link
    link_class: str
    pair: tuple[int, int]
    reference: tuple[int, int]
    z: float
    retests: tuple[Retest, ...]

    @property
    def confirmed(self) -> bool:
        return any(t.slow for t in self.retests)


def retests_text(retests: Sequence[Retest]) -> str:
    return ", ".join(f"{t.measurement} {format_size(t.nbytes)} {t.excess:+.0%}" for t in retests)


def retest(sus: Mapping[str, Any], ref: Mapping[str, Any], measurement: str, threshold: float,
           z: float) -> Retest:
    """One re-judged test from the suspect's and the reference's records at its size."""
    p = MEASUREMENTS[measurement]
    ts, tr = float(sus[f"{p}_median"]), float(ref[f"{p}_median"])
    s, r = [float(x) for x in sus[f"{p}_blocks"]], [float(x) for x in ref[f"{p}_blocks"]]
    if len(r) != len(s) + 1:
        raise ValueError(f"{len(s)} suspect blocks need {len(s) + 1} reference blocks, got {len(r)}")
    excess = ts / tr - 1.0
    noise = math.hypot(float(sus[f"{p}_noise"]), float(ref[f"{p}_noise"])) / tr
    blocks = tuple(s[j] / ((r[j] + r[j + 1]) / 2) - 1.0 for j in range(len(s)))
    slow = (excess > threshold and excess > z * noise
            and 2 * sum(e > threshold for e in blocks) > len(blocks))
    return Retest(measurement, int(sus["nbytes"]), excess, noise, blocks, ts, tr, slow)


def decide(records: Sequence[Mapping[str, Any]], threshold: float) -> list[Verdict]:
    """A verdict for every check of the pass whose records are all there, in check order."""
    by: dict[int, dict[tuple[str, int], Mapping[str, Any]]] = defaultdict(dict)
    for r in probe_records(records, confirm=True):
        by[int(r["check"])][(str(r["role"]), int(r["nbytes"]))] = r
    tests = {i: [(str(m), int(n)) for m, n in next(iter(recs.values()))["tests"]]
             for i, recs in by.items()}
    z = z_for(sum(len(t) for t in tests.values()))
    out = []
    for i in sorted(by):
        recs = by[i]
        if not all(("suspect", n) in recs and ("reference", n) in recs for _, n in tests[i]):
            continue  # the pass ended during this check
        sus = next(v for (role, _), v in recs.items() if role == "suspect")
        ref = next(v for (role, _), v in recs.items() if role == "reference")
        out.append(Verdict(
            i, str(sus["suspect"]), str(sus["suspect_what"]), str(sus["link_class"]),
            (int(sus["src"]), int(sus["dst"])), (int(ref["src"]), int(ref["dst"])), z,
            tuple(retest(recs[("suspect", n)], recs[("reference", n)], m, threshold, z)
                  for m, n in tests[i])))
    return out
