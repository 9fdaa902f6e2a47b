"""Several baselines: each key is decided against every baseline run on its own (the one-baseline
rule) and the verdicts are combined, so more baselines never pass what one of them would catch.
Slower (faster) when every baseline says so; undecided when some say slower and others do not:
the baselines disagree by more than the effect (docs/compare.md, "Several baselines")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from bench.gate.decide import Decision

UNDECIDED = "undecided"


def verdict(each: Sequence[Decision]) -> str:
    """The combined verdict of one key's decisions against each baseline."""
    said = [d.verdict for d in each]
    if said and all(v == "slower" for v in said):
        return "slower"
    if "slower" in said:
        return UNDECIDED
    if said and all(v == "faster" for v in said):
        return "faster"
    return "untested" if said and all(v == "untested" for v in said) else "same"


def needed(pooled: Decision, each: Sequence[Decision]) -> float:
    """The effect over the pooled baselines' median that is slower than every baseline: each
    baseline's own need, seen from the pooled median (``pooled.ratio / d.ratio`` is baseline
    median over pooled median)."""
    needs = [(1 + d.needed) * pooled.ratio / d.ratio - 1 for d in each
             if math.isfinite(d.ratio) and d.ratio > 0 and math.isfinite(d.needed)]
    return max(needs) if needs and math.isfinite(pooled.ratio) else pooled.needed


def combined(pooled: Decision, each: Sequence[Decision]) -> Decision:
    """``pooled`` (every baseline's samples together: the table's ratio and interval) with the
    combined verdict and need, and the method saying how many baselines agreed."""
    v = verdict(each)
    slower = sum(d.verdict == "slower" for d in each)
    how = f"slower than {slower} of {len(each)} baselines" if slower else f"{len(each)} baselines"
    return replace(pooled, verdict=v, needed=needed(pooled, each), method=f"{pooled.method}; {how}")
