"""Compare a current run against a baseline run: one :class:`Row` per key, and a verdict.

Failing outcomes (exit 1): a key slower beyond noise and threshold, a deterministic field
(``bytes_sent_max``, ``wrong``) that changed, a case that passed in the baseline and failed now.
Reported but passing: faster keys, keys only in one run, cases that failed in both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.compare.decide import Decision, Rule, decide
from bench.compare.keys import DETERMINISTIC, KEY, Case, InputError, Key, load_cases
from bench.compare.reference import REFERENCE, relative

FAILING = frozenset({"slower", "changed", "failed"})
# Outcomes of keys whose timing does not gate (unless Rule.strict): the vendor reference itself
# (not the code under test) and oversubscribed cases (stalls, not code, move their numbers).
DEMOTED = {"reference": {"slower": "reference slower", "faster": "reference faster"},
           "oversubscribed": {"slower": "noisy slower", "faster": "noisy faster"}}


@dataclass(frozen=True)
class Row:
    key: Key
    kind: str
    outcome: str  # slower | faster | same | untested | changed | failed | fixed | both failed
    # | only in baseline | only in current
    decision: Decision | None = None
    detail: str = ""
    base_median: float = math.nan
    cur_median: float = math.nan

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


@dataclass(frozen=True)
class GateResult:
    baseline: Path
    current: Path
    rule: Rule
    rows: list[Row] = field(default_factory=list)

    @property
    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.failing]

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.rows if r.outcome == outcome)

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0


def _exact(base: Case, cur: Case) -> str:
    """The deterministic fields that differ, as 'field a -> b'; '' when equal."""
    changes = []
    for f in DETERMINISTIC:
        a, b = base.exact.get(f), cur.exact.get(f)
        if a is not None and b is not None and a != b:
            changes.append(f"{f} {_one(a)} -> {_one(b)}")
    return "; ".join(changes)


def _one(values: set[object]) -> str:
    return str(next(iter(values))) if len(values) == 1 else "{" + ", ".join(map(str, values)) + "}"


def compare_case(base: Case, cur: Case, rule: Rule, base_all: Mapping[Key, Case],
                 cur_all: Mapping[Key, Case]) -> Row:
    if base.ok and not cur.ok:
        return Row(cur.key, cur.kind, "failed", detail="status " + ",".join(sorted(set(cur.statuses))))
    if not base.ok:
        return Row(cur.key, cur.kind, "fixed" if cur.ok else "both failed")
    changed = _exact(base, cur)
    b, c = base.array(), cur.array()
    meds = (_median(b), _median(c))
    rel_b, rel_c = ((relative(base, base_all), relative(cur, cur_all)) if rule.reference
                    else (None, None))
    relative_to = rel_b is not None and rel_c is not None
    if relative_to:
        b, c = rel_b, rel_c  # type: ignore[assignment]
    d = decide(b, c, rule, summaries=base.summaries or cur.summaries,
               blocks=min(base.blocks, cur.blocks),
               abs_diff=meds[1] - meds[0])
    if changed:
        return Row(cur.key, cur.kind, "changed", d, changed, *meds)
    outcome, detail = d.verdict, f"relative to {REFERENCE}" if relative_to else ""
    if not rule.strict and outcome in ("slower", "faster"):
        if rule.reference and cur.key[KEY.index("algorithm")] == REFERENCE:
            outcome = DEMOTED["reference"][outcome]
        elif base.oversubscribed or cur.oversubscribed:
            outcome = DEMOTED["oversubscribed"][outcome]
    return Row(cur.key, cur.kind, outcome, d, detail, *meds)


def _median(a: np.ndarray) -> float:
    return float(np.median(a)) if a.size else math.nan


def compare_cases(base: Mapping[Key, Case], cur: Mapping[Key, Case], rule: Rule) -> list[Row]:
    rows = [compare_case(base[k], cur[k], rule, base, cur) for k in base if k in cur]
    rows += [Row(k, c.kind, "only in baseline") for k, c in base.items() if k not in cur]
    rows += [Row(k, c.kind, "only in current") for k, c in cur.items() if k not in base]
    return rows


def compare_runs(baseline: Path, current: Path, rule: Rule | None = None) -> GateResult:
    """Raises :class:`InputError` (one line) for runs that cannot be compared."""
    rule = rule or Rule()
    base_meta, base = load_cases(baseline)
    cur_meta, cur = load_cases(current)
    if base_meta.get("schema_version") != cur_meta.get("schema_version"):
        raise InputError(f"schema mismatch: {baseline} has schema_version "
                         f"{base_meta.get('schema_version')}, {current} has "
                         f"{cur_meta.get('schema_version')}")
    if not set(base) & set(cur):
        raise InputError(f"no common keys between {baseline} ({len(base)} keys) and {current} "
                         f"({len(cur)} keys): not runs of the same scenario?")
    return GateResult(Path(baseline), Path(current), rule, compare_cases(base, cur, rule))
