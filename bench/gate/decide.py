"""Deciding one key (lower is better): slower only when a one-sided Mann-Whitney U test is
significant and the bootstrap interval of median(current)/median(baseline) lies above ``1 +
max(threshold, drift)``, the medians at least ``min_abs`` apart; faster is the mirror
image. The rule in full: docs/compare.md."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_SAMPLES = 5  # below this a rank test has no power; decide on the point ratio, flagged
MIN_BLOCK = 20  # samples per block for a block median to estimate drift (5 are one stall away
# from any value; the bootstrap interval already carries that noise)


@dataclass(frozen=True)
class Rule:
    threshold: float = 0.05  # minimum relative effect (0.05 = 5 % slower)
    alpha: float = 0.01  # one-sided significance level of the U test
    confidence: float = 0.95  # of the bootstrap interval
    resamples: int = 1000
    seed: int = 0
    min_abs: float = 1.0  # smallest difference of medians that counts, in sample units (µs):
    # below it a Python-timed loop measures its own call overhead, not the collective
    reference: bool = False  # decide algorithms on their time relative to native (reference.py)
    strict: bool = False  # also fail oversubscribed cases and the reference itself


@dataclass(frozen=True)
class Decision:
    verdict: str  # "slower", "faster", "same", or "untested" (too few samples)
    ratio: float
    low: float  # bootstrap interval of the ratio
    high: float
    p_slower: float
    p_faster: float
    needed: float  # the effect the interval had to clear (threshold or drift: the larger)
    method: str


def drift(samples: np.ndarray, blocks: int) -> float:
    """Relative spread of the medians of consecutive repetition blocks (0 when too few)."""
    if blocks < 2 or samples.size < MIN_BLOCK * blocks:
        return 0.0
    meds = [float(np.median(b)) for b in np.array_split(samples, blocks)]
    lo, hi = min(meds), max(meds)
    return hi / lo - 1.0 if lo > 0 else 0.0


def _ratio_of_medians(cur: np.ndarray, base: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(cur, axis=axis) / np.median(base, axis=axis)


def interval(cur: np.ndarray, base: np.ndarray, rule: Rule) -> tuple[float, float]:
    from scipy import stats  # imported on use: the CLI starts without scipy
    res = stats.bootstrap((cur, base), _ratio_of_medians, n_resamples=rule.resamples,
                          confidence_level=rule.confidence, method="percentile",
                          vectorized=True, rng=np.random.default_rng(rule.seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def decide(base: np.ndarray, cur: np.ndarray, rule: Rule, summaries: bool = False,
           blocks: int | tuple[int, int] = 1, abs_diff: float | None = None) -> Decision:
    """Slower, faster or same for one key from its raw samples (lower is better). ``blocks``:
    repetition blocks of both, or (baseline's, current's); ``abs_diff``: the difference of the
    raw medians when ``base``/``cur`` are relative samples."""
    from scipy import stats  # imported on use: the CLI starts without scipy
    base_blocks, cur_blocks = blocks if isinstance(blocks, tuple) else (blocks, blocks)
    base = base[np.isfinite(base)]
    cur = cur[np.isfinite(cur)]
    if base.size == 0 or cur.size == 0:
        return Decision("untested", math.nan, math.nan, math.nan, math.nan, math.nan,
                        rule.threshold, "no samples")
    ratio = float(np.median(cur) / np.median(base))
    diff = abs(abs_diff if abs_diff is not None else float(np.median(cur) - np.median(base)))
    if diff < rule.min_abs:
        return Decision("same", ratio, math.nan, math.nan, math.nan, math.nan,
                        rule.threshold, f"difference of medians under {rule.min_abs:g}")
    if summaries or min(base.size, cur.size) < MIN_SAMPLES:
        need = rule.threshold
        verdict = ("slower" if ratio > 1 + need else "faster" if ratio < 1 / (1 + need) else "same")
        return Decision(verdict, ratio, ratio, ratio, math.nan, math.nan, need,
                        "point ratio only (summaries or too few samples: no noise estimate)")
    needed = max(rule.threshold, drift(base, base_blocks), drift(cur, cur_blocks))
    p_slow = float(stats.mannwhitneyu(cur, base, alternative="greater").pvalue)
    p_fast = float(stats.mannwhitneyu(cur, base, alternative="less").pvalue)
    maybe_slow = p_slow < rule.alpha and ratio > 1 + needed
    maybe_fast = p_fast < rule.alpha and ratio < 1 / (1 + needed)
    if not (maybe_slow or maybe_fast):  # the interval can only confirm; skip its cost
        return Decision("same", ratio, math.nan, math.nan, p_slow, p_fast, needed,
                        "U test + effect")
    low, high = interval(cur, base, rule)
    if maybe_slow and low > 1 + needed:
        verdict = "slower"
    elif maybe_fast and high < 1 / (1 + needed):
        verdict = "faster"
    else:
        verdict = "same"
    return Decision(verdict, ratio, low, high, p_slow, p_fast, needed, "U test + bootstrap CI")
