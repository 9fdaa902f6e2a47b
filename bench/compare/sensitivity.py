"""How small a slowdown the gate detects: scale one key's samples at a time and count detections.

    python -m bench.compare.sensitivity BASELINE [CURRENT] [--factors 1.05,1.1,1.2,1.3]

For each factor and each gated key, the current run's samples of that key alone are multiplied
by the factor (the other keys untouched, as when one algorithm regresses) and the key is decided
as ``commbench compare`` would. Without CURRENT the baseline is compared with a scaled copy of
itself (no run-to-run noise: an upper bound); with CURRENT, a second run of the same scenario
supplies real run-to-run noise. Factor 1.0 is always included: its rate is the false-alarm rate.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.compare.decide import Rule
from bench.compare.gate import compare_case
from bench.compare.keys import KEY, Case, InputError, Key, load_cases

_WORLD = KEY.index("world_size")


def scaled(case: Case, factor: float) -> Case:
    return replace(case, samples=[x * factor for x in case.samples],
                   statuses=list(case.statuses), exact=dict(case.exact))


def detection(base: Mapping[Key, Case], cur: Mapping[Key, Case], factor: float,
              rule: Rule) -> dict[int, tuple[int, int]]:
    """Per world size: (keys flagged slower, keys tested)."""
    out: dict[int, tuple[int, int]] = {}
    for k, b in base.items():
        c = cur.get(k)
        if c is None or not (b.ok and c.ok) or b.oversubscribed or c.oversubscribed:
            continue
        if float(np.median(c.array())) * max(factor - 1, 0.05) < rule.min_abs:
            continue  # below the timer resolution floor at this factor: undecidable by design
        s = scaled(c, factor)
        row = compare_case(b, s, rule, base, {**cur, k: s})
        if row.outcome.startswith("reference"):
            continue
        hit, n = out.get(k[_WORLD], (0, 0))
        out[k[_WORLD]] = (hit + (row.outcome == "slower"), n + 1)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.compare.sensitivity", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline", type=Path)
    p.add_argument("current", type=Path, nargs="?")
    p.add_argument("--factors", default="1.05,1.1,1.2,1.3")
    p.add_argument("--threshold", type=float, default=5.0, metavar="PCT")
    p.add_argument("--relative", action="store_true")
    args = p.parse_args(argv)
    try:
        factors = [1.0, *(float(f) for f in args.factors.split(","))]
        _, base = load_cases(args.baseline)
        _, cur = load_cases(args.current) if args.current else (None, base)
    except (InputError, ValueError) as e:
        print(f"sensitivity: {e}", file=sys.stderr)
        return 2
    rule = Rule(threshold=args.threshold / 100, reference=args.relative)
    print(f"# baseline {args.baseline}, current {args.current or '(scaled copy of baseline)'}, "
          f"threshold {args.threshold:g}%, {'relative to native' if args.relative else 'absolute'}"
          "; oversubscribed keys and keys whose slowdown would be under the 1 µs resolution floor "
          "excluded")
    print(f"# {'factor':>6}  {'detected':>9}  {'rate':>6}  per world size (detected/tested)")
    for f in factors:
        per = detection(base, cur, f, rule)
        hit = sum(h for h, _ in per.values())
        n = sum(t for _, t in per.values())
        worlds = "  ".join(f"p={w}: {h}/{t}" for w, (h, t) in sorted(per.items()))
        print(f"  {f:>6.2f}  {hit:>4}/{n:<4}  {hit / n if n else 0:>6.1%}  {worlds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
