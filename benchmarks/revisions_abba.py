"""One scenario under two revisions of commbench, in A B B A order, compared key by key.

    python -m benchmarks.revisions_abba BASE HEAD [--scenario scenarios/quick.yaml] [--order ABBA]

Each revision runs in its own git worktree (this checkout's ``.venv``), one whole run per letter
of ``--order``, one after the other. A key is a case (collective, algorithm, transport, world
size, size, dtype, op); its figure is the run's ``time_us_median``. Per key, HEAD / BASE is the
ratio of HEAD's median over its runs to BASE's. The table gives the median of those ratios over
every key, with their 10th and 90th percentiles, for all keys and by size band, and the same
ratio between BASE's own two runs (their order effect: the noise a difference must exceed).
A B B A cancels a drift that is linear in time; commbench ab's paired rounds are the gate, this
is a one-run check that a change did not move the figures.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.argtypes import OneLineParser
from bench.store.records import load_results
from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
KEY = ["collective", "algorithm", "transport", "world_size", "nbytes", "dtype", "op"]


class RunFailed(Exception):
    """One side's run ended non-zero (its stderr's tail)."""


BANDS = (("≤ 4 KiB", 0, 4096), ("4 KiB – 1 MiB", 4097, 1 << 20), ("> 1 MiB", (1 << 20) + 1, 1 << 62))


def _run(tree: Path, scenario: Path, out: Path) -> dict[tuple, float]:
    cmd = [str(ROOT / ".venv" / "bin" / "python"), "-m", "bench", "run", str(scenario),
           "--out", str(out), "--no-progress", "--no-report"]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunFailed(f"{tree.name}: commbench run failed: {proc.stderr.strip()[-400:]}")
    df = load_results(out)
    df = df[(df["kind"] == "collective") & (df["status"] == "ok") & (df["world_size"] > 1)]
    return {tuple(k): float(v) for k, v in zip(df[KEY].itertuples(index=False),
                                                df["time_us_median"], strict=True)}


def _ratios(a: list[dict[tuple, float]], b: list[dict[tuple, float]]) -> dict[tuple, float]:
    keys = set.intersection(*(set(r) for r in a + b))
    return {k: statistics.median(r[k] for r in b) / statistics.median(r[k] for r in a)
            for k in keys}


def _line(name: str, ratios: dict[tuple, float]) -> str:
    vals = sorted(ratios.values())
    if not vals:
        return f"{name:<28} {'-':>6}"
    q = statistics.quantiles(vals, n=10) if len(vals) > 1 else [vals[0]] * 9
    return f"{name:<28} {len(vals):>5} {statistics.median(vals):>8.3f} {q[0]:>8.3f} {q[-1]:>8.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.revisions_abba",
                       description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the revision before (git rev)")
    ap.add_argument("head", help="the revision after (git rev)")
    ap.add_argument("--scenario", default="scenarios/quick.yaml",
                    help="scenario path inside each revision (scenarios/quick.yaml)")
    ap.add_argument("--order", default="ABBA", help="A = BASE, B = HEAD, one run each (ABBA)")
    args = ap.parse_args(argv)
    if set(args.order) - {"A", "B"} or args.order.count("A") < 1 or args.order.count("B") < 1:
        ap.error(f"--order {args.order!r}: letters A and B, each at least once")
    with tempfile.TemporaryDirectory(prefix="abba-") as tmp:
        trees = {}
        for letter, rev in (("A", args.base), ("B", args.head)):
            tree = Path(tmp) / letter
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT,
                           check=True, capture_output=True)
            trees[letter] = tree
        try:
            runs: dict[str, list[dict[tuple, float]]] = {"A": [], "B": []}
            return_on = None
            for i, letter in enumerate(args.order):
                print(f"# run {i + 1}/{len(args.order)}: {letter} "
                      f"({args.base if letter == 'A' else args.head})", flush=True)
                try:
                    runs[letter].append(_run(trees[letter], Path(args.scenario),
                                             Path(tmp) / f"run{i}"))
                except RunFailed as e:
                    return_on = str(e)
                    break
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                               capture_output=True)
    if return_on:
        print(f"commbench: revisions_abba: {return_on}", file=sys.stderr)
        return 1
    ab = _ratios(runs["A"], runs["B"])
    print(f"\nHEAD / BASE of time_us_median per key (world size > 1), {args.order}: "
          f"{args.base} → {args.head}, {args.scenario}")
    print(f"{'keys':<28} {'n':>5} {'median':>8} {'p10':>8} {'p90':>8}")
    print(_line("all", ab))
    for band, lo, hi in BANDS:
        print(_line(f"  {band}", {k: v for k, v in ab.items() if lo <= k[4] <= hi}))
    if len(runs["A"]) > 1:
        print(_line("BASE run 2 / BASE run 1", _ratios(runs["A"][:1], runs["A"][-1:])))
    if len(runs["B"]) > 1:
        print(_line("HEAD run 2 / HEAD run 1", _ratios(runs["B"][:1], runs["B"][-1:])))
    return 0


if __name__ == "__main__":
    sys.exit(results.run(__file__, main))
