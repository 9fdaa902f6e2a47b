"""``commbench compare BASELINE [BASELINE ...] CURRENT``: the regression gate (exit 1 on a
regression). Several baselines (runs of the baseline code) let the gate measure run-to-run noise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.argtypes import UsageError, in_path, nonneg_float, out_file, percent, probability
from bench.collective import canary
from bench.commands import register


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", type=in_path, nargs="+",
                   help="baseline run directory; give two or more runs of the baseline code to "
                        "have the gate measure and allow for run-to-run noise")
    p.add_argument("current", type=in_path, help="current run directory")
    p.add_argument("--threshold", type=percent, default=5.0, metavar="PCT",
                   help="minimum slowdown that counts, in percent (default 5)")
    p.add_argument("--alpha", type=probability, default=0.01,
                   help="one-sided significance level of the U test (default 0.01)")
    p.add_argument("--relative", action="store_true",
                   help="decide each algorithm on its time relative to native measured beside it "
                        "(robust on shared machines; blind to a slowdown of everything)")
    p.add_argument("--run-alpha", type=probability, default=0.001, metavar="A",
                   help="with several baselines: one-sided level of the run-to-run noise floor "
                        "(default 0.001)")
    p.add_argument("--strict", action="store_true",
                   help="also fail on oversubscribed cases (and on native with --relative)")
    p.add_argument("--min-abs", type=nonneg_float, default=1.0, metavar="US",
                   help="smallest difference of medians that counts, in µs (default 1)")
    p.add_argument("--html", type=out_file, default=None, metavar="FILE",
                   help="also write an HTML report of both runs with the verdict on top")
    p.add_argument("--all", action="store_true", help="list every key, not only changed ones")


def handle(args: argparse.Namespace) -> int:
    from bench.gate.compare import compare_runs
    from bench.gate.decide import Rule  # scipy: imported when the command runs, not at start
    from bench.gate.keys import InputError
    from bench.gate.table import render

    if not 0 <= args.threshold < 100 or not 0 < args.alpha < 1 or not 0 < args.run_alpha < 1:
        raise UsageError("--threshold must be in [0, 100), --alpha and --run-alpha in (0, 1)",
                         "compare")
    rule = Rule(threshold=args.threshold / 100, alpha=args.alpha, reference=args.relative,
                strict=args.strict, min_abs=args.min_abs, run_alpha=args.run_alpha)
    try:
        res = compare_runs(args.baseline, args.current, rule)
    except InputError as e:
        raise UsageError(str(e), "compare") from None
    print(render(res, everything=args.all))
    for line in canary_notes(args.baseline, args.current):
        print(f"# note: {line}")
    if args.html:
        from reports.gate_section import gate_section
        from reports.render import render_report

        out = render_report([*args.baseline, args.current], args.html, extra=[gate_section(res)],
                            title=f"commbench compare — {res.baseline} vs {args.current}")
        print(f"# report: {out}", file=sys.stderr)
    return res.exit_code


def canary_notes(baselines: list[Path], current: Path) -> list[str]:
    """Where the drift canaries say a run changed speed, or the runs ran on machines (or modes)
    of different speed."""
    cur = canary.read(current)
    out = [f"{current}: {canary.WARNING} ({line})" for line in canary.assess(cur)]
    for b in baselines:
        base = canary.read(b)
        out += [f"{b}: {canary.WARNING} ({line})" for line in canary.assess(base)]
        out += [f"canaries of {b} and {current} disagree, so the machine differed between them: "
                f"{line}" for line in canary.disagree(base, cur)]
    return out


register("compare", "compare a run against baseline run(s); exit 1 on a regression", configure,
         handle, example="{run} {run}", offline=True, results=(0, 1))
