"""The paired gate's verdict as text: ``commbench compare``'s table (same columns and order), a
header that says how keys were decided, and a note per world size on what the rounds could see."""

from __future__ import annotations

import math

import numpy as np

from bench.gate.compare import GateResult
from bench.gate.table import by_world, table


def render(res: GateResult, rounds: int, alpha: float, everything: bool = False) -> str:
    rule = res.rule
    mode = "relative to native beside them, block by block" if rule.reference else "absolute times"
    head = (f"# commbench ab  base={res.baseline}  head={res.current}  rounds={rounds}  ({mode})\n"
            f"# slower = the exact one-sided Wilcoxon signed-rank test on the per-round log ratios "
            f"median(HEAD)/median(BASE) rejects 'ratio <= 1+{rule.threshold:.0%}' at {alpha:g} "
            f"(false alarms per key <= {alpha:g}), and the within-run U test (p<{rule.alpha:g}) "
            f"and {rule.confidence:.0%} bootstrap interval on the rounds' samples (each round scaled "
            f"by its medians) agree\n"
            f"# ratio = Hodges-Lehmann estimate of the per-round ratio, interval = its one-sided "
            f"bounds, need = the slowdown a key must show to be flagged (its detectable effect)")
    return table(res, head, ("base", "head"), everything, detectable(res))


def detectable(res: GateResult) -> list[str]:
    """Per world size: the median and largest detectable slowdown over the keys it decided."""
    needs = by_world(res, lambda r: r.decision.needed if r.decision and math.isfinite(
        r.decision.needed) and r.decision.method.startswith("paired") else None)
    return [f"# detectable at world_size={w}: median +{float(np.median(n)):.0%}, largest "
            f"+{max(n):.0%} over {len(n)} keys" for w, n in needs]
