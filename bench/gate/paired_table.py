"""The paired gate's verdict as text: ``commbench compare``'s table (same columns and order), a
header that says how keys were decided, and a note per world size on what the rounds could see."""

from __future__ import annotations

import math

import numpy as np

from bench.gate.compare import GateResult
from bench.gate.keys import KEY
from bench.gate.table import ORDER, SHOWN, line


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
            f"bounds, need = the slowdown a key must show to be flagged (its detectable effect)\n"
            f"{'# outcome':<17} {'base':>10} {'head':>10} {'':<2} {'ratio':>7} "
            f"{'interval':<17} {'need':>5} {'p(slower)':>8} key")
    rank = {o: i for i, o in enumerate(ORDER)}
    rows = sorted((r for r in res.rows if everything or r.outcome in SHOWN),
                  key=lambda r: (rank.get(r.outcome, len(ORDER)), -(r.decision.ratio
                                 if r.decision and math.isfinite(r.decision.ratio) else 0)))
    counts = ", ".join(f"{res.count(o)} {o}" for o in ORDER if res.count(o))
    verdict = (f"FAIL: {len(res.failures)} of {len(res.rows)} keys regressed"
               if res.failures else f"PASS: no regression in {len(res.rows)} keys")
    return "\n".join([head, *(line(r) for r in rows), f"# {counts}", *detectable(res), verdict])


def detectable(res: GateResult) -> list[str]:
    """Per world size: the median and largest detectable slowdown over the keys it decided."""
    by_world: dict[object, list[float]] = {}
    for r in res.rows:
        d = r.decision
        if d and math.isfinite(d.needed) and d.method.startswith("paired"):
            by_world.setdefault(r.key[KEY.index("world_size")], []).append(d.needed)
    return [f"# detectable at world_size={w}: median +{float(np.median(n)):.0%}, largest "
            f"+{max(n):.0%} over {len(n)} keys"
            for w, n in sorted(by_world.items(), key=lambda kv: str(kv[0]))]
