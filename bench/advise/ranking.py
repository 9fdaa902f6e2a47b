"""How far a ranking is to be trusted: ranks with ties within a relative noise, Spearman's ρ
between two orders, and the layouts tied with the best within an error band (docs/advise.md,
Uncertainty). Pure functions of numbers: the benchmark (benchmarks/advise_ranking.py) and the
printed table use the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def tied_ranks(values: Sequence[float], noise: float = 0.0) -> list[float]:
    """Ranks (1 = smallest) of ``values``; a run of sorted values each within ``noise``
    (relative) of the run's first is one tie, every member given the run's mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start + 1
        first = values[order[start]]
        while end < len(order) and values[order[end]] <= first * (1 + noise):
            end += 1
        mean = (start + 1 + end) / 2  # ranks start+1 .. end
        for i in order[start:end]:
            ranks[i] = mean
        start = end
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's ρ of two rankings (Pearson's correlation of the ranks); None where either
    has no spread (every member tied) or fewer than two members."""
    n = len(a)
    if n != len(b):
        raise ValueError(f"rankings of {n} and {len(b)} members")
    if n < 2:
        return None
    ma, mb = sum(a) / n, sum(b) / n
    sa = math.fsum((x - ma) ** 2 for x in a)
    sb = math.fsum((y - mb) ** 2 for y in b)
    if sa == 0 or sb == 0:
        return None
    return math.fsum((x - ma) * (y - mb) for x, y in zip(a, b)) / math.sqrt(sa * sb)


def tied_with_best(steps: Sequence[float], band: float) -> int:
    """How many of ``steps`` (sorted, best first) lie within ``band`` (relative) of the best:
    the first choice and the layouts the model cannot tell from it."""
    if not steps:
        return 0
    return sum(1 for s in steps if s <= steps[0] * (1 + band))


def margin(steps: Sequence[float]) -> float | None:
    """The runner-up's step over the best's, minus 1 (None with fewer than two)."""
    return steps[1] / steps[0] - 1 if len(steps) > 1 else None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, by linear interpolation between order
    statistics (numpy's default)."""
    if not values:
        raise ValueError("no values")
    xs = sorted(values)
    at = q * (len(xs) - 1)
    lo = math.floor(at)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (at - lo)
