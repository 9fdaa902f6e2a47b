"""``commbench ab [BASE HEAD] SCENARIO``: the paired regression gate between two sides run
alternately (:mod:`bench.gate.ab`); exit 0 no regression, 1 regression, 2 unusable input, 128 +
signal when interrupted. docs/gate.md."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.argtypes import UsageError, in_path, nonneg_int, out_dir, out_file, positive_int, probability
from bench.commands import register
from bench.gate.ab import AbError, AbInterrupted, Side, mark_interrupted, run_rounds
from bench.gate.absides import prepared
from bench.gate.flags import add_rule_flags, rule_from
from bench.gate.keys import InputError
from bench.gate.matched import mismatched, own_stacks, round_speeds
from bench.gate.paired import PAIRED_ALPHA, compare_dirs, min_rounds
from bench.gate.paired_table import render
from bench.gate.sidespec import PART_HELP, PARTS, SideSpec, SpecError, combine, parse
from bench.gate.stack import describe, differences
from bench.launch import launcher
from bench.launch.signals import SignalGuard
from bench.store.resume import default_run_dir

AB = ("threshold", "reference", "min_abs", "strict")  # --alpha is the paired test's, not Rule's


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", nargs="?", type=_spec(parse, "side"),
                   help="baseline side: a revision (branch, tag, commit), or parts KIND:VALUE joined "
                        "by + (rev:, env:, env-file:, python:, prefix:), or . (this checkout as is)")
    p.add_argument("head", nargs="?", type=_spec(parse, "side"), help="side under test, as BASE")
    p.add_argument("scenario", type=in_path, help="scenario YAML file, run by both (e.g. scenarios/ci.yaml)")
    for side in ("base", "head"):
        for kind, fn in PARTS.items():
            metavar, what = PART_HELP[kind]
            p.add_argument(f"--{side}-{kind}", type=_spec(fn, kind), action="append", default=[],
                           metavar=metavar, help=f"{side.upper()}: {what}")
    p.add_argument("--reruns", type=nonneg_int, default=None, metavar="N",
                   help="rounds run again, at most, when the machine changed speed between a "
                        "round's two runs (default: as many as --rounds; 0: none, such rounds are "
                        "only set aside)")
    p.add_argument("--rounds", type=positive_int, default=5,
                   help="matched runs per side, alternating (default 5); a round whose two runs' "
                        "drift canaries disagree is set aside and run again, up to as many again")
    p.add_argument("--out", type=out_dir, default=None, metavar="DIR",
                   help="new directory for base/, head/ (one run directory per side, rounds appended) "
                        "and rounds/ (default: runs/<time>-ab-<scenario>)")
    p.add_argument("--html", type=out_file, default=None, metavar="FILE",
                   help="also write an HTML report of both sides with the verdict on top")
    add_rule_flags(p, AB, more={
        "reference": "(also cancels a machine that changed speed between the two runs of a "
                     "round; blind to a slowdown of everything)"})
    p.add_argument("--alpha", type=probability, default=PAIRED_ALPHA,
                   help=f"false-alarm rate per key of the paired signed-rank test (default "
                        f"{PAIRED_ALPHA:g}; n rounds reach 2^-n at best: 5 rounds for 0.05, 7 for 0.01)")
    p.add_argument("--all", action="store_true", help="list every key, not only changed ones")


def _spec(fn: Callable[[str], SideSpec], name: str) -> Callable[[str], SideSpec]:
    """A side or part parser as an argparse type: its error is argparse's one line."""
    def typed(text: str) -> SideSpec:
        try:
            return fn(text)
        except SpecError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    typed.__name__ = name
    typed.example = "HEAD" if name in ("side", "rev") else {  # type: ignore[attr-defined]
        "env": "A=1", "env-file": "/dev/null", "python": sys.executable, "prefix": "env"}[name]
    return typed


def side_specs(args: argparse.Namespace) -> dict[str, SideSpec]:
    """Each side: its positional's parts and its flags' (UsageError when they clash)."""
    if (args.base is None) != (args.head is None):
        raise UsageError("give BASE and HEAD both, or neither (the --base-* and --head-* flags "
                         "then say what each side is)", "ab")
    out = {}
    for side in ("base", "head"):
        flags = [x for kind in PARTS for x in getattr(args, f"{side}_{kind.replace('-', '_')}")]
        try:
            out[side] = combine([getattr(args, side) or SideSpec(), *flags])
        except SpecError as e:
            raise UsageError(f"{side.upper()}: {e}", "ab") from None
    return out


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def handle(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    if args.rounds < 2:
        raise UsageError("--rounds must be >= 2 (the paired test needs the spread between rounds)",
                         "ab")
    if args.rounds < min_rounds(args.alpha):
        raise UsageError(f"--alpha {args.alpha:g} needs --rounds >= {min_rounds(args.alpha)} "
                         "(n rounds can show a false-alarm rate of 2^-n at best)", "ab")
    if launcher.inside_mpi_job():
        raise UsageError("it launches its own runs: start it from a shell, not under mpiexec/srun",
                         "ab")
    scenario = args.scenario.resolve()
    if not scenario.is_file():
        raise UsageError(f"{args.scenario}: no such scenario file", "ab")
    out = (args.out or default_run_dir(f"ab-{scenario.stem}")).resolve()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: exists and is not empty", "ab")
    rule = rule_from(args, AB)
    specs = side_specs(args)
    try:
        sides = _run_sides(args, specs, scenario, out)
        t_runs = time.monotonic() - t0
        res = compare_dirs(out / "base", out / "head", rule, args.alpha)
    except AbInterrupted as e:
        return _interrupted(e, out)
    except (AbError, InputError, ValueError) as e:
        raise UsageError(str(e), "ab") from None
    aside = mismatched(round_speeds(out / "base"), round_speeds(out / "head"),
                       own_stacks(out / "base", out / "head"))
    for m in aside:
        print(f"# set aside, {m.describe()}: the machine changed speed between the two runs")
    diffs = differences(*sides)
    print(f"# BASE: {sides[0].spec}\n# HEAD: {sides[1].spec}\n" + "\n".join(describe(diffs)))
    print(render(res, args.rounds, args.alpha, everything=args.all))
    if args.html:
        from reports.ab_section import ab_section
        from reports.render import render_report

        page = render_report([out / "base", out / "head"], args.html,
                             extra=[ab_section(res, args.rounds, args.alpha, sides, diffs)],
                             title=f"commbench ab — {sides[0].spec} vs {sides[1].spec}")
        _say(f"# report: {page}")
    runs = sum(sum(s.seconds) for s in sides)
    print(f"# wall time {time.monotonic() - t0:.0f} s: {runs:.0f} s in "
          f"{sum(len(s.seconds) for s in sides)} runs of "
          f"{args.scenario}, {t_runs - runs:.0f} s worktrees and checks, "
          f"{time.monotonic() - t0 - t_runs:.0f} s deciding and reporting")
    return res.exit_code


def _run_sides(args: argparse.Namespace, specs: dict[str, SideSpec], scenario: Path,
               out: Path) -> list[Side]:
    """The sides (worktrees, checks, stacks) and the rounds; signals end it as
    :class:`AbInterrupted` once the run in flight has ended and the worktrees are gone."""
    with SignalGuard() as guard:
        try:
            with prepared(specs, out) as sides:
                _say(f"# ab: {args.rounds} rounds of {args.scenario}, "
                     + " vs ".join(f"{s.label} {s.spec}" for s in sides) + f", into {out}")
                run_rounds(sides, scenario, args.rounds, out / "rounds", _say, guard,
                           extra=args.rounds if args.reruns is None else args.reruns, checked=True)
        except AbError:
            if guard.signum is not None:  # a git or check the signal killed too
                raise AbInterrupted(guard.signum) from None
            raise
        if guard.signum is not None:  # arrived after the last run, while the worktrees went
            raise AbInterrupted(guard.signum)
    return sides


def _interrupted(e: AbInterrupted, out: Path) -> int:
    marked = mark_interrupted(out, e)
    where = f" during {e.where}" if e.where else ""
    kept = f"; the rounds so far are in {out} ({', '.join(marked)} marked interrupted)" if marked else ""
    print(f"commbench: ab: interrupted by {e.name}{where}; worktrees removed{kept}",
          file=sys.stderr, flush=True)
    return e.exit_code


register("ab", "paired A/B gate: run a scenario alternately on two sides (revisions, variables, "
         "interpreters, prefixes); exit 1 on a regression", configure, handle,
         example="main HEAD scenarios/quick.yaml")
