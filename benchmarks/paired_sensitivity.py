"""Measured sensitivity of the paired gate (``commbench ab``) on this machine.

    python -m benchmarks.paired_sensitivity [--scenario scenarios/ci.yaml] [--rounds-total 8]

Worktrees of one commit (``--rev``, default HEAD) play BASE and every HEAD: ``head-1.00`` is the
same code (its alarms are false alarms), ``head-F`` the same code with all_reduce ``ring`` made F
times slower by the test-only plugin ``tests/plugins/commbench_slowdown`` (``COMMBENCH_PLUGINS``,
``COMMBENCH_SLOWDOWN=F``; never in the shipped algorithms). Every round runs the scenario once per
side, in an order that rotates by one side per round. Then every choice of ``--rounds`` of the
rounds (up to ``--max-trials``, spread evenly over the combinations) is one ``commbench ab`` of
that many rounds, decided absolute and relative to native; the table gives, per factor, how often
the ring keys of at least ``--min-bytes`` at world size >= 2 are called slower, and at 1.00 the
false alarms per key (any algorithm) and per job (exit 1 on any key).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.argtypes import OneLineParser, positive_int, probability
from bench.gate.ab import AbError, Side, git, resolve, run_rounds, worktrees
from bench.gate.decide import Rule
from bench.gate.flags import add_rule_flags
from bench.gate.keys import KEY, InputError, Key
from bench.gate.matched import mismatched, round_speeds
from bench.gate.paired import PAIRED_ALPHA, Round, decide_rounds, load_rounds
from benchmarks import results

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "tests" / "plugins"
PLUGIN = "commbench_slowdown"
TARGET = "ring"
_ALG, _WORLD, _BYTES = (KEY.index(f) for f in ("algorithm", "world_size", "nbytes"))


def sides_for(factors: Sequence[float], rev: str, sha: str, trees: dict[str, Path],
              out: Path) -> list[Side]:
    sides = [Side("base", rev, sha, trees["base"], out / "base"),
             Side("head-1.00", rev, sha, trees["head"], out / "head-1.00")]
    for f in factors:
        sides.append(Side(f"head-{f:.2f}", rev, sha, trees["head"], out / f"head-{f:.2f}",
                          env={"COMMBENCH_PLUGINS": PLUGIN, "COMMBENCH_SLOWDOWN": str(f)},
                          path=(PLUGIN_DIR,)))
    return sides


def trials(n: int, k: int, limit: int) -> list[tuple[int, ...]]:
    every = list(itertools.combinations(range(n), k))
    step = max(1, len(every) // limit)
    return every[::step][:limit]


def gated(key: Key, min_bytes: int) -> bool:
    return (key[_WORLD] or 0) >= 2 and (key[_BYTES] or 0) >= min_bytes


@dataclass
class Tally:
    ring: dict[int, list[int]] = field(default_factory=dict)  # nbytes -> [flagged, tested]
    other: list[int] = field(default_factory=lambda: [0, 0])
    jobs: list[int] = field(default_factory=lambda: [0, 0])  # [failed, trials]
    ratios: list[float] = field(default_factory=list)

    def add(self, pairs: Sequence[Round], rule: Rule, alpha: float, min_bytes: int) -> None:
        res = decide_rounds(pairs, rule, alpha=alpha)
        self.jobs[0] += res.exit_code == 1
        self.jobs[1] += 1
        for r in res.rows:
            if not gated(r.key, min_bytes):
                continue
            slow = int(r.outcome == "slower")
            if r.key[_ALG] == TARGET:
                hit = self.ring.setdefault(int(r.key[_BYTES]), [0, 0])
                hit[0] += slow
                hit[1] += 1
                if r.decision is not None and math.isfinite(r.decision.ratio):
                    self.ratios.append(r.decision.ratio)
            else:
                self.other[0] += slow
                self.other[1] += 1

    def row(self, mode: str, head: str) -> str:
        hit, n = (sum(v[i] for v in self.ring.values()) for i in (0, 1))
        sizes = ", ".join(f"{b // 1024} KiB {h}/{t}" for b, (h, t) in sorted(self.ring.items()))
        med = float(np.median(self.ratios)) if self.ratios else math.nan
        return (f"| {mode} | {head} | {hit}/{n} | {hit / n if n else math.nan:.0%} | {sizes} | "
                f"{med:.3f} | {self.other[0]}/{self.other[1]} "
                f"({self.other[0] / max(self.other[1], 1):.1%}) | {self.jobs[0]}/{self.jobs[1]} |")


def table(out: Path, names: Sequence[str], k: int, limit: int, min_bytes: int,
          threshold: float, alpha: float) -> list[str]:
    base, base_speed = load_rounds(out / "base"), round_speeds(out / "base")
    lines = [f"| mode | HEAD | ring keys >= {min_bytes // 1024} KiB called slower | rate | by size | "
             "ring ratio (median estimate) | other keys called slower | jobs failing (any key) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for relative_to in (False, True):
        rule = Rule(threshold=threshold, reference=relative_to)
        for name in names:
            head = load_rounds(out / name)
            every = sorted(set(base) & set(head))
            off = {m.round for m in mismatched(base_speed, round_speeds(out / name))}
            common = [r for r in every if r not in off]  # what ab decides on: matched rounds
            tally = Tally()
            for t in trials(len(common), k, limit):
                tally.add([(base[common[i]], head[common[i]]) for i in t], rule, alpha, min_bytes)
            lines.append(tally.row("relative" if relative_to else "absolute",
                                   f"{name[5:]}x ({len(common)}/{len(every)} matched)"))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(prog="python -m benchmarks.paired_sensitivity", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", type=Path, default=Path("scenarios/ci.yaml"))
    p.add_argument("--rev", default="HEAD", help="the commit every side runs (default HEAD)")
    p.add_argument("--factors", default="1.05,1.1,1.15,1.2,1.3")
    p.add_argument("--rounds-total", type=positive_int, default=8, help="rounds run (default 8)")
    p.add_argument("--rounds", type=positive_int, default=5, help="rounds per simulated ab job (default 5)")
    p.add_argument("--max-trials", type=positive_int, default=28)
    p.add_argument("--min-bytes", type=positive_int, default=65536)
    add_rule_flags(p, ("threshold",))
    p.add_argument("--alpha", type=probability, default=PAIRED_ALPHA, help="the paired test's level")
    p.add_argument("--out", type=Path, default=Path("runs/paired-sensitivity"))
    p.add_argument("--reuse", action="store_true", help="analyse the rounds already in --out")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        factors = [float(f) for f in args.factors.split(",")]
        names = ["head-1.00", *(f"head-{f:.2f}" for f in factors)]
        if not args.reuse:
            if args.out.exists() and any(args.out.iterdir()):
                raise AbError(f"{args.out}: exists and is not empty (or give --reuse)")
            if not (PLUGIN_DIR / PLUGIN).is_dir():
                raise AbError(f"{PLUGIN_DIR / PLUGIN}: the test plugin is missing (a source checkout "
                              "is needed)")
            repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
            sha = resolve(repo, args.rev)
            out = args.out.resolve()
            with worktrees(repo, {"base": sha, "head": sha}) as trees:
                sides = sides_for(factors, args.rev, sha, trees, out)
                run_rounds(sides, args.scenario.resolve(), args.rounds_total, out / "rounds",
                           lambda m: print(m, file=sys.stderr, flush=True))
            secs = [s for side in sides for s in side.seconds]
            print(f"# {len(secs)} runs of {args.scenario} in {time.monotonic() - t0:.0f} s; one run "
                  f"{np.median(secs):.1f} s median ({min(secs):.1f}-{max(secs):.1f}), so an ab job of "
                  f"{args.rounds} rounds ~ {2 * args.rounds * np.median(secs):.0f} s of runs")
        lines = table(args.out, names, args.rounds, args.max_trials, args.min_bytes,
                      args.threshold / 100, args.alpha)
    except (AbError, InputError, ValueError) as e:
        print(f"paired_sensitivity: {e}", file=sys.stderr)
        return 2
    print(f"# trials: up to {args.max_trials} choices of {args.rounds} of the rounds per HEAD; "
          f"threshold {args.threshold:g}%, alpha {args.alpha:g}")
    print("\n".join(lines))
    print(f"# total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
