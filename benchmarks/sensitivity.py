"""How small a slowdown the gate detects, and how often it cries wolf: scale one key at a time.

    python -m benchmarks.sensitivity RUN [RUN ...] [--baselines K] [--factors 1.05,1.1,1.2,1.3]

For each factor and each gated key, the current run's samples of that key alone are multiplied
by the factor (the other keys untouched, as when one algorithm regresses) and the key is decided
as ``commbench compare`` would. With one RUN it is compared with a scaled copy of itself (no
run-to-run noise: an upper bound). With several runs of the same code, every run in turn is the
current one and K of the others are its baselines (all combinations, up to ``--max-trials``):
real run-to-run noise, and with K >= 2 every baseline's verdict combined (an undecided key is not
flagged). Factor 1.0 is always included: its
rate is the false-alarm rate.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.argtypes import OneLineParser, positive_int
from bench.gate.compare import Side, compare_case
from bench.gate.decide import Rule
from bench.gate.flags import add_rule_flags, rule_from
from bench.gate.keys import KEY, Case, InputError, Key, load_cases
from benchmarks import results

_WORLD = KEY.index("world_size")
RULE = ("threshold", "reference")  # the gate flags this benchmark takes


def scaled(case: Case, factor: float) -> Case:
    return replace(case, samples=[x * factor for x in case.samples],
                   statuses=list(case.statuses), exact=dict(case.exact))


def detection(base: Side, cur: Mapping[Key, Case], factor: float,
              rule: Rule) -> dict[int, tuple[int, int]]:
    """Per world size: (keys flagged slower, keys tested)."""
    out: dict[int, tuple[int, int]] = {}
    for k, b in base.cases.items():
        c = cur.get(k)
        if c is None or not (b.ok and c.ok) or b.oversubscribed or c.oversubscribed:
            continue
        if float(np.median(c.array())) * max(factor - 1, 0.05) < rule.min_abs:
            continue  # below the timer resolution floor at this factor: undecidable by design
        row = compare_case(k, base, Side.of([{**cur, k: scaled(c, factor)}]), rule)
        if row.outcome.startswith("reference"):
            continue
        hit, n = out.get(k[_WORLD], (0, 0))
        out[k[_WORLD]] = (hit + (row.outcome == "slower"), n + 1)
    return out


def trials(n: int, k: int, limit: int) -> list[tuple[tuple[int, ...], int]]:
    """(baseline indices, current index) pairs: each run current in turn, K others as baselines;
    at most ``limit``, spread evenly over all combinations."""
    if n == 1:
        return [((0,), 0)]
    every = [(b, c) for c in range(n) for b in itertools.combinations(
        [i for i in range(n) if i != c], k)]
    step = max(1, len(every) // limit)
    return every[::step][:limit]


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(prog="python -m benchmarks.sensitivity", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", type=Path, nargs="+", help="runs of the same scenario and code")
    p.add_argument("--baselines", type=positive_int, default=1, metavar="K",
                   help="baseline runs per trial (several runs given; default 1)")
    p.add_argument("--max-trials", type=positive_int, default=12)
    p.add_argument("--factors", default="1.05,1.1,1.2,1.3")
    add_rule_flags(p, RULE)
    args = p.parse_args(argv)
    try:
        factors = [1.0, *(float(f) for f in args.factors.split(","))]
        runs = [load_cases(r)[1] for r in args.runs]
        if len(runs) > 1 and not 1 <= args.baselines < len(runs):
            raise ValueError(f"--baselines must be 1..{len(runs) - 1} with {len(runs)} runs")
    except (InputError, ValueError) as e:
        print(f"sensitivity: {e}", file=sys.stderr)
        return 2
    rule = rule_from(args, RULE)
    plan = trials(len(runs), args.baselines, args.max_trials)
    what = ("current = scaled copy of the baseline" if len(runs) == 1 else
            f"{len(plan)} trials of {args.baselines} baseline run(s) vs another run")
    print(f"# {len(runs)} run(s): {what}; threshold {args.threshold:g}%, "
          f"{'relative to native' if args.relative else 'absolute'}; oversubscribed keys and keys "
          "whose slowdown would be under the 1 µs resolution floor excluded")
    print(f"# {'factor':>6}  {'detected':>11}  {'rate':>6}  per world size (detected/tested)")
    for f in factors:
        per: dict[int, tuple[int, int]] = {}
        for bi, ci in plan:
            base = Side.of([runs[i] for i in bi])
            for w, (h, t) in detection(base, runs[ci], f, rule).items():
                ph, pt = per.get(w, (0, 0))
                per[w] = (ph + h, pt + t)
        hit = sum(h for h, _ in per.values())
        n = sum(t for _, t in per.values())
        worlds = "  ".join(f"p={w}: {h}/{t}" for w, (h, t) in sorted(per.items()))
        print(f"  {f:>6.2f}  {hit:>5}/{n:<5}  {hit / n if n else 0:>6.1%}  {worlds}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
