"""``commbench compare BASELINE [BASELINE ...] CURRENT``: the regression gate (exit 1 on a
regression). Several baselines (runs of the baseline code) let the gate measure run-to-run noise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.argtypes import in_path, out_file
from bench.collective import canary
from bench.commands import register, said
from bench.gate.flags import add_rule_flags, rule_from

COMPARE = ("threshold", "alpha", "reference", "strict", "min_abs")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", type=in_path, nargs="+",
                   help="baseline run directory; give two or more runs of the baseline code to "
                        "have the gate measure and allow for run-to-run noise")
    p.add_argument("current", type=in_path, help="current run directory")
    add_rule_flags(p, COMPARE, more={
        "reference": "(robust on shared machines; blind to a slowdown of everything)",
        "strict": "(and on native with --relative)"})
    p.add_argument("--html", type=out_file, default=None, metavar="FILE",
                   help="also write an HTML report of both runs with the verdict on top")
    p.add_argument("--all", action="store_true", help="list every key, not only changed ones")


def handle(args: argparse.Namespace) -> int:
    from bench.gate.compare import compare_runs
    from bench.gate.keys import InputError
    from bench.gate.table import render

    rule = rule_from(args, COMPARE)
    with said("compare", InputError):
        res = compare_runs(args.baseline, args.current, rule)
    machine, notes = canary_notes(args.baseline, args.current)
    print(render(res, everything=args.all, machine=machine))
    for line in notes:
        print(f"# note: {line}")
    if args.html:
        from reports.gate_section import gate_section
        from reports.render import render_report

        out = render_report([*args.baseline, args.current], args.html, extra=[gate_section(res)],
                            title=f"commbench compare — {res.baseline} vs {args.current}")
        print(f"# report: {out}", file=sys.stderr)
    return res.exit_code


def canary_notes(baselines: list[Path], current: Path) -> tuple[bool | None, list[str]]:
    """Whether the drift canaries say the machine changed (None: no run recorded any), and a
    note where a run changed speed or the runs ran on machines (or modes) of different speed."""
    cur = canary.read(current)
    out = [f"{current}: {canary.WARNING} ({line})" for line in canary.assess(cur)]
    seen = bool(cur)
    for b in baselines:
        base = canary.read(b)
        seen = seen and bool(base)
        out += [f"{b}: {canary.WARNING} ({line})" for line in canary.assess(base)]
        out += [f"canaries of {b} and {current} disagree, so the machine differed between them: "
                f"{line}" for line in canary.disagree(base, cur)]
    return (bool(out) if seen or out else None), out


register("compare", "compare a run against baseline run(s); exit 1 on a regression", configure,
         handle, example="{run} {run}", offline=True, results=(0, 1))
