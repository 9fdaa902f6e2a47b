"""What running a self-launched job in a private network namespace costs: a scenario (by default
scenarios/quick.yaml) run with and without isolation, alternated (A B B A ...), and per case the
ratio of the two medians (isolated / not), each round's runs seconds apart.

    python -m benchmarks.isolation [--rounds 4] [--scenario scenarios/quick.yaml] [--out DIR]

No effect is expected beyond noise: the namespace changes where sockets live, not how the ranks
move bytes (shared memory on one host). Printed: the median, the 10th and 90th percentile of the
per-case ratios (of the cases' medians over rounds), the same for an A/A pairing of the
unisolated runs with each other (the noise floor of this machine), and the set-up time per job
that the namespace adds (the run's wall time, median per side)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bench.argtypes import OneLineParser, positive_int
from bench.store.records import iter_records, read_meta
from benchmarks import results
from benchmarks.subrun import ROOT, add_out, bench, each, fresh_dir

SIDES = ("isolated", "plain")


def _medians(run: Path) -> dict[tuple[object, ...], float]:
    return {(r["collective"], r["algorithm"], r["world_size"], r["nbytes"]):
            float(np.median(r["samples_us"])) for r in iter_records(run)
            if r.get("status") == "ok" and r.get("samples_us")}


def _ratios(a: list[dict[tuple[object, ...], float]], b: list[dict[tuple[object, ...], float]],
            ) -> np.ndarray:
    """Per case: the median over rounds of a's median, over the same of b's."""
    keys = set.intersection(*(set(r) for r in a + b))
    return np.array([np.median([r[k] for r in a]) / np.median([r[k] for r in b])
                     for k in sorted(keys, key=str)])


def _line(name: str, r: np.ndarray) -> str:
    p10, p50, p90 = np.percentile(r, [10, 50, 90])
    return f"{name:<28} {len(r):>5} cases  median {p50:.3f}  p10 {p10:.3f}  p90 {p90:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.isolation", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=positive_int, default=4)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "quick.yaml")
    add_out(ap, "isolation")
    args = ap.parse_args(argv)
    out = fresh_dir("isolation", args.out)
    t0 = time.monotonic()

    def one(i: int) -> dict[str, tuple[Path, float]]:
        got = {}
        for side in (SIDES if i % 2 == 0 else SIDES[::-1]):  # A B, then B A: drift favours neither
            run, start = out / f"{side}-{i}", time.monotonic()
            bench("isolation", "run", str(args.scenario), "--out", str(run), "--no-report",
                  "--no-progress", *(["--no-isolate"] if side == "plain" else []))
            got[side] = (run, time.monotonic() - start)
        return got

    rounds = list(each(args.rounds, "round", "done", one, t0))
    for side in SIDES:
        want = side == "isolated"
        seen = {read_meta(r[side][0])["isolation"]["isolated"] for r in rounds}
        if seen != {want}:
            raise SystemExit(f"isolation: the {side} runs were isolated: {seen}")
    meds = {s: [_medians(r[s][0]) for r in rounds] for s in SIDES}
    print(f"# {args.scenario.name}, {args.rounds} rounds alternated; ratio = median over rounds "
          "of a case's median, first side over second")
    print(_line("isolated / plain", _ratios(meds["isolated"], meds["plain"])))
    half = args.rounds // 2
    if half:
        print(_line("plain / plain (A/A noise)", _ratios(meds["plain"][:half],
                                                          meds["plain"][half:2 * half])))
    for side in SIDES:
        print(f"{side:<28} run wall time median {np.median([r[side][1] for r in rounds]):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(results.run(__file__, main))
