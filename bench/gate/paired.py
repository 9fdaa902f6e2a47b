"""Paired A/B statistics: each key decided on its per-round log ratios ``log(median(HEAD_r) /
median(BASE_r))`` by an exact one-sided Wilcoxon signed-rank test, with which the within-run
tests on the rounds' normalised samples must agree. docs/gate.md, "How a key is decided"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench.gate.compare import GateResult, Row, Side, demoted, exact_changes, one_sided, status_row
from bench.gate.decide import Decision, Rule, decide
from bench.gate.keys import Case, InputError, Key, cases, load_cases
from bench.gate.matched import mismatched, own_stacks, round_speeds
from bench.gate.reference import round_median, values
from bench.store.records import iter_records

ROUND = "round"  # the field `commbench ab` tags each record with
PAIRED_ALPHA = 0.05  # default false-alarm rate per key of the paired test
Round = tuple[Mapping[Key, Case], Mapping[Key, Case]]  # (BASE, HEAD) cases of one round


@dataclass(frozen=True)
class Paired:
    """One key's paired statistics over ``n`` rounds (log ratios ``d``)."""

    n: int
    center: float  # Hodges-Lehmann estimate of the log ratio: median of the Walsh averages
    low: float  # one-sided lower confidence bound of the ratio (level alpha)
    high: float  # one-sided upper bound
    p_slower: float  # exact signed-rank p-value of "ratio > 1"
    p_faster: float
    need: float  # observed effect that is flagged: the key's detectable slowdown

    @property
    def ratio(self) -> float:
        return math.exp(self.center)


def log_ratios(rounds: Sequence[Round], key: Key, relative_to: bool = False) -> np.ndarray:
    """``log(median HEAD / median BASE)`` of ``key`` in each round where both sides measured it."""
    out = []
    for base, head in rounds:
        b, h = round_median(key, base, relative_to), round_median(key, head, relative_to)
        if b is not None and h is not None:
            out.append(math.log(h / b))
    return np.asarray(out, dtype=float)


def signed_rank_null(n: int) -> np.ndarray:
    """P(T+ = t), t = 0 .. n(n+1)/2: the signed-rank statistic when each round's sign is a coin."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts = counts + np.concatenate([np.zeros(r), counts[:-r]])
    return counts / 2.0**n


def min_rounds(alpha: float) -> int:
    """Fewest rounds whose smallest attainable p-value (all rounds one way: 2^-n) is <= alpha."""
    return max(2, math.ceil(math.log2(1 / alpha) - 1e-12))


def paired(d: np.ndarray, rule: Rule, alpha: float = PAIRED_ALPHA) -> Paired | None:
    """Exact one-sided Wilcoxon signed-rank statistics of the per-round log ratios (bounds: the
    Walsh averages at the test's critical count); None when too few rounds to reach ``alpha``."""
    n = d.size
    if n < min_rounds(alpha):
        return None
    null = signed_rank_null(n)
    tail = np.cumsum(null[::-1])[::-1]  # tail[t] = P(T+ >= t)
    crit = int(np.argmax(tail <= alpha))  # the smallest t with P(T+ >= t) <= alpha
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    low, high = float(walsh[walsh.size - crit]), float(walsh[crit - 1])
    center = float(np.median(walsh))
    t_obs = int((walsh > 0).sum())  # = the sum of the positive rounds' ranks
    return Paired(n, center, math.exp(low), math.exp(high), float(tail[t_obs]),
                  float(null[: t_obs + 1].sum()), (1 + rule.threshold) * math.exp(center - low) - 1)


def combine(within: Decision, pr: Paired | None, rule: Rule, alpha: float) -> Decision:
    """Slower (faster) only when the paired bound and the within-run tests agree."""
    if pr is None:
        return replace(within, verdict="untested",
                       method=f"too few rounds for the paired test at {alpha:g} "
                              f"(it needs {min_rounds(alpha)})")
    slow = pr.low > 1 + rule.threshold and within.verdict == "slower"
    fast = pr.high < 1 / (1 + rule.threshold) and within.verdict == "faster"
    verdict = "slower" if slow else "faster" if fast else "same"
    return Decision(verdict, pr.ratio, pr.low, pr.high, pr.p_slower, pr.p_faster,
                    max(pr.need, within.needed),
                    f"paired signed-rank over {pr.n} rounds (level {alpha:g}) + "
                    f"within-run {within.verdict} ({within.method})")


def normalized(rounds: Sequence[Round], key: Key,
               relative_to: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' samples of ``key``, each round's divided by the geometric mean of its medians."""
    parts: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for base, head in rounds:
        b, h = values(key, base, relative_to), values(key, head, relative_to)
        mb, mh = round_median(key, base, relative_to), round_median(key, head, relative_to)
        if b is not None and h is not None and mb is not None and mh is not None:
            g = math.sqrt(mb * mh)
            parts[0].append(b / g)
            parts[1].append(h / g)
    return (np.concatenate(parts[0]) if parts[0] else np.array([]),
            np.concatenate(parts[1]) if parts[1] else np.array([]))


def decide_key(key: Key, rounds: Sequence[Round], base: Side, head: Side, rule: Rule,
               alpha: float = PAIRED_ALPHA) -> Row:
    b, h = base.cases[key], head.cases[key]
    meds = (float(np.median(b.array())), float(np.median(h.array())))
    done = status_row(b, h) or (Row(h.key, h.kind, "changed", detail=changes)
                                if (changes := exact_changes(b, h)) else None)
    if done is not None:
        return replace(done, base_median=meds[0], cur_median=meds[1])
    rel = rule.reference
    pr = paired(log_ratios(rounds, key, rel), rule, alpha)
    if pr is not None and (pr.low > 1 + rule.threshold or pr.high < 1 / (1 + rule.threshold)):
        within = decide(*normalized(rounds, key, rel), rule, summaries=b.summaries or h.summaries,
                        abs_diff=meds[1] - meds[0])
    else:  # the paired bound already says "same": the within-run tests could not change that
        within = Decision("same", math.nan, math.nan, math.nan, math.nan, math.nan, rule.threshold,
                          "not run")
    d = combine(within, pr, rule, alpha)
    return Row(key, h.kind, demoted(d.verdict, rule, b, h), d, "relative to native" if rel else "",
               *meds)


def decide_rounds(rounds: Sequence[Round], rule: Rule, base_dir: Path = Path("BASE"),
                  head_dir: Path = Path("HEAD"), alpha: float = PAIRED_ALPHA) -> GateResult:
    """Every key of the rounds decided; ``alpha``: the paired test's false-alarm rate per key."""
    if not rounds:
        raise InputError("no rounds to compare")
    base, head = Side.of([b for b, _ in rounds]), Side.of([h for _, h in rounds])
    rows = [decide_key(k, rounds, base, head, rule, alpha) for k in base.cases if k in head.cases]
    return GateResult((base_dir,), head_dir, rule, rows + one_sided(base.cases, head.cases))


def load_rounds(run_dir: Path) -> dict[int, dict[Key, Case]]:
    """A side's cases per round (records without a round tag are round 0)."""
    load_cases(run_dir)  # the usual one-line errors: missing, schema, empty
    by_round: dict[int, list[dict[str, object]]] = {}
    for rec in iter_records(run_dir):
        by_round.setdefault(int(rec.get(ROUND) or 0), []).append(rec)
    return {r: cases(recs) for r, recs in sorted(by_round.items())}


def compare_dirs(base_dir: Path, head_dir: Path, rule: Rule,
                 alpha: float = PAIRED_ALPHA) -> GateResult:
    """Decide every key on the matched rounds two side directories have in common."""
    base, head = load_rounds(base_dir), load_rounds(head_dir)
    common = sorted(set(base) & set(head))
    if not common:
        raise InputError(f"{base_dir} and {head_dir} have no round in common")
    off = {m.round for m in mismatched(round_speeds(base_dir), round_speeds(head_dir),
                                       own_stacks(base_dir, head_dir))}
    kept = [r for r in common if r not in off]
    if not kept:
        raise InputError(f"{base_dir} and {head_dir}: in every round the machine changed speed "
                         "between the two runs (drift canary); no round can be compared")
    return decide_rounds([(base[r], head[r]) for r in kept], rule, base_dir, head_dir, alpha)
