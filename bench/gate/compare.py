"""Compare a current run against one or several baseline runs: one :class:`Row` per key, and a
verdict (exit 1 on a :data:`FAILING` outcome, 2 when a key is undecided). Several baselines are
each held to the one-baseline rule (:mod:`bench.gate.several`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bench.gate.decide import Decision, Rule, decide
from bench.gate.keys import DETERMINISTIC, KEY, Case, InputError, Key, load_cases, pooled
from bench.gate.reference import REFERENCE, relative
from bench.gate.several import UNDECIDED, combined

FAILING = frozenset({"slower", "changed", "failed"})
# Outcomes of keys whose timing does not gate (unless Rule.strict): the vendor reference itself
# (not the code under test) and oversubscribed cases (stalls, not code, move their numbers).
DEMOTED = {"reference": {o: f"reference {o}" for o in ("slower", "faster", UNDECIDED)},
           "oversubscribed": {o: f"noisy {o}" for o in ("slower", "faster", UNDECIDED)}}


@dataclass(frozen=True)
class Row:
    key: Key
    kind: str
    outcome: str  # slower | faster | same | undecided | untested | changed | failed | fixed
    # | both failed | only in baseline | only in current
    decision: Decision | None = None
    detail: str = ""
    base_median: float = math.nan
    cur_median: float = math.nan

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


@dataclass(frozen=True)
class GateResult:
    baselines: tuple[Path, ...]
    current: Path
    rule: Rule
    rows: list[Row] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return ", ".join(map(str, self.baselines))

    @property
    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.failing]

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.rows if r.outcome == outcome)

    @property
    def undecided(self) -> list[Row]:
        """Keys some baselines call slower and others not (they gate: never a pass)."""
        return [r for r in self.rows if r.outcome == UNDECIDED]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 2 if self.undecided else 0


def exact_changes(base: Case, cur: Case) -> str:
    """The deterministic fields that differ, as 'field a -> b'; '' when equal."""
    changes = []
    for f in DETERMINISTIC:
        a, b = base.exact.get(f), cur.exact.get(f)
        if a is not None and b is not None and a != b:
            changes.append(f"{f} {_one(a)} -> {_one(b)}")
    return "; ".join(changes)


def _one(values: set[object]) -> str:
    return str(next(iter(values))) if len(values) == 1 else "{" + ", ".join(map(str, values)) + "}"


def status_row(base: Case, cur: Case) -> Row | None:
    """The outcome of a key that failed in either run (no timing question), else None."""
    if base.ok and not cur.ok:
        return Row(cur.key, cur.kind, "failed", detail="status " + ",".join(sorted(set(cur.statuses))))
    return None if base.ok else Row(cur.key, cur.kind, "fixed" if cur.ok else "both failed")


def demoted(outcome: str, rule: Rule, base: Case, cur: Case) -> str:
    """``outcome``, but slower / faster of a key whose timing does not gate (:data:`DEMOTED`)."""
    if rule.strict or outcome not in DEMOTED["reference"]:
        return outcome
    if rule.reference and cur.key[KEY.index("algorithm")] == REFERENCE:
        return DEMOTED["reference"][outcome]
    return DEMOTED["oversubscribed"][outcome] if base.oversubscribed or cur.oversubscribed else outcome


def one_sided(base: Mapping[Key, Case], cur: Mapping[Key, Case]) -> list[Row]:
    """Rows of the keys only one side has."""
    return ([Row(k, c.kind, "only in baseline") for k, c in base.items() if k not in cur]
            + [Row(k, c.kind, "only in current") for k, c in cur.items() if k not in base])


@dataclass(frozen=True)
class Side:
    """One side of a comparison: one or several runs of a scenario, their cases pooled."""

    runs: tuple[Mapping[Key, Case], ...]
    cases: Mapping[Key, Case]

    @classmethod
    def of(cls, runs: Sequence[Mapping[Key, Case]]) -> Side:
        return cls(tuple(runs), pooled(runs))

    def relative(self, key: Key) -> np.ndarray | None:
        """The key's samples relative to native, run by run (each against its own native)."""
        parts = [relative(r[key], r) for r in self.runs if key in r]
        if not parts or any(p is None for p in parts):
            return None
        return np.concatenate(parts)  # type: ignore[arg-type]


def compare_case(key: Key, base_side: Side, cur_side: Side, rule: Rule) -> Row:
    """The key's row: against the one baseline run, or against each of several (combined)."""
    row = compare_one(key, base_side, cur_side, rule)
    if len(base_side.runs) < 2 or row.decision is None or row.outcome == "changed":
        return row
    each = [compare_one(key, Side.of([r]), cur_side, rule) for r in base_side.runs if key in r]
    decisions = [r.decision for r in each if r.decision is not None]
    if len(decisions) < len(each):  # a baseline run failed this key: the pooled status row says
        return row
    d = combined(row.decision, decisions)
    base, cur = base_side.cases[key], cur_side.cases[key]
    return replace(row, outcome=demoted(d.verdict, rule, base, cur), decision=d)


def compare_one(key: Key, base_side: Side, cur_side: Side, rule: Rule) -> Row:
    """The one-baseline rule, the baselines' samples pooled."""
    base, cur = base_side.cases[key], cur_side.cases[key]
    if (done := status_row(base, cur)) is not None:
        return done
    changed = exact_changes(base, cur)
    b, c = base.array(), cur.array()
    meds = (_median(b), _median(c))
    rel_b, rel_c = ((base_side.relative(key), cur_side.relative(key)) if rule.reference
                    else (None, None))
    relative_to = rel_b is not None and rel_c is not None
    if relative_to:
        b, c = rel_b, rel_c  # type: ignore[assignment]
    d = decide(b, c, rule, summaries=base.summaries or cur.summaries,
               blocks=(base.blocks, cur.blocks), abs_diff=meds[1] - meds[0])
    if changed:
        return Row(cur.key, cur.kind, "changed", d, changed, *meds)
    return Row(cur.key, cur.kind, demoted(d.verdict, rule, base, cur), d,
               f"relative to {REFERENCE}" if relative_to else "", *meds)


def _median(a: np.ndarray) -> float:
    return float(np.median(a)) if a.size else math.nan


def compare_runs(baseline: Path | Sequence[Path], current: Path,
                 rule: Rule | None = None) -> GateResult:
    """The gate's result; :class:`InputError` (one line) for runs that cannot be compared."""
    rule = rule or Rule()
    paths = [Path(baseline)] if isinstance(baseline, (str, Path)) else [Path(b) for b in baseline]
    loaded = [load_cases(p) for p in paths]
    cur_meta, cur = load_cases(current)
    for p, (meta, _) in zip(paths, loaded):
        if meta.get("schema_version") != cur_meta.get("schema_version"):
            raise InputError(f"schema mismatch: {p} has schema_version "
                             f"{meta.get('schema_version')}, {current} has "
                             f"{cur_meta.get('schema_version')}")
    base = Side.of([c for _, c in loaded])
    if not set(base.cases) & set(cur):
        raise InputError(f"no common keys between {', '.join(map(str, paths))} "
                         f"({len(base.cases)} keys) and {current} ({len(cur)} keys): "
                         "not runs of the same scenario?")
    side = Side.of([cur])
    rows = [compare_case(k, base, side, rule) for k in base.cases if k in cur]
    return GateResult(tuple(paths), Path(current), rule, rows + one_sided(base.cases, cur))
