"""How well the cost model predicts this machine: calibrate on one sweep, predict another.

    python -m bench.perf.predict_accuracy [--rounds 3] [--out runs/predict-accuracy]

Each round runs two p = 2 sweeps back to back on this host (``commbench run``, self-launched):

- ``cal``: all_reduce ring and tree, all_gather ring, broadcast binomial, 4 KiB - 16 MiB (x4);
- ``test``: other algorithms and other sizes — reduce_scatter ring and recursive_halving,
  all_gather recursive_doubling and bruck, all_reduce halving_doubling, reduce binomial and
  rabenseifner, alltoall pairwise, 8 KiB - 32 MiB (x4);

then ``commbench calibrate cal -o round.yaml`` and ``commbench predict --profile round.yaml
--topology 1x2`` for the test sweep's collectives, algorithms and sizes, and pairs every predicted
median with the measured one (``reports.sections.prediction.pair``). The two sweeps of a round run
seconds apart, so a machine that changes speed between rounds (the development VM does) moves both.
Printed: per round and pooled, the median and the worst |error| at >= 64 KiB, and the worst key.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from bench.records import load_results
from bench.units import format_size
from reports.sections.prediction import pair

ROOT = Path(__file__).resolve().parents[2]
LARGE = 64 << 10
COMMON = """\
transports: [mpi]
world_sizes: [2]
dtypes: [float32]
ops: [sum]
check: false
timing: {{warmup: 3, time_budget_ms: 120, min_iters: 10, max_iters: 400, repetitions: 2}}
sizes: {{min: {lo}, max: {hi}, factor: 4}}
"""
CAL = {"all_reduce": ["ring", "tree"], "all_gather": ["ring"], "broadcast": ["binomial"]}
TEST = {"reduce_scatter": ["ring", "recursive_halving"], "all_gather": ["recursive_doubling", "bruck"],
        "all_reduce": ["halving_doubling"], "reduce": ["binomial", "rabenseifner"],
        "alltoall": ["pairwise"]}


def scenario(name: str, algs: dict[str, list[str]], lo: str, hi: str) -> str:
    lines = [f"name: {name}", f"collectives: [{', '.join(algs)}]", "algorithms:"]
    lines += [f"  {c}: [{', '.join(a)}]" for c, a in algs.items()]
    return "\n".join(lines) + "\n" + COMMON.format(lo=lo, hi=hi)


def bench(*args: str) -> None:
    cmd = [sys.executable, "-m", "bench", *args]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"predict_accuracy: {' '.join(args[:2])} failed ({res.returncode}): "
                         + " | ".join(tail))


def one_round(out: Path, i: int) -> pd.DataFrame:
    d = out / f"round{i}"
    d.mkdir(parents=True)
    for name, algs, lo, hi in (("cal", CAL, "4KiB", "16MiB"), ("test", TEST, "8KiB", "32MiB")):
        (d / f"{name}.yaml").write_text(scenario(f"accuracy-{name}", algs, lo, hi))
        bench("run", str(d / f"{name}.yaml"), "--out", str(d / name), "--no-progress")
    bench("calibrate", str(d / "cal"), "-o", str(d / "profile.yaml"))
    sizes = sorted({int(n) for n in load_results(d / "test", samples=False)["nbytes"]})
    bench("predict", "--profile", str(d / "profile.yaml"), "--topology", "1x2",
          "--collectives", ",".join(TEST), "--algorithms", ",".join(sorted({a for v in TEST.values()
                                                                            for a in v})),
          "--sizes", ",".join(f"{s}B" for s in sizes), "--transport", "mpi",
          "--out", str(d / "pred"))
    both = pd.concat([load_results(d / "test", samples=False), load_results(d / "pred", samples=False)],
                     ignore_index=True)
    both["ranks_per_node"] = 0  # p = 2 on one host: the measured run may leave it unset
    got = pair(both)
    got["round"] = i
    return got


def summary(df: pd.DataFrame, label: str) -> str:
    big = df[df["nbytes"] >= LARGE]
    if big.empty:
        return f"{label}: no key >= {format_size(LARGE)}"
    err = big["error"].abs()
    w = big.loc[err.idxmax()]
    return (f"{label}: {len(big)} keys >= {format_size(LARGE)}: median |error| {err.median():.1%}, "
            f"worst {err.max():.1%} ({w['collective']} {w['algorithm']} "
            f"{format_size(int(w['nbytes']))}: measured {w['measured']:.1f} us, predicted "
            f"{w['predicted']:.1f} us); all sizes: median {df['error'].abs().median():.1%}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.perf.predict_accuracy", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(f"runs/{time.strftime('%Y%m%d-%H%M%S')}"
                                                     "-predict-accuracy"))
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"predict_accuracy: {out} exists and is not empty")
    t0 = time.monotonic()
    frames = []
    for i in range(args.rounds):
        frames.append(one_round(out, i))
        print(summary(frames[-1], f"round {i}") + f"  [{time.monotonic() - t0:.0f} s, load "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}]", flush=True)
    allr = pd.concat(frames, ignore_index=True)
    allr.to_csv(out / "errors.csv", index=False)
    print(summary(allr, f"pooled over {args.rounds} rounds"))
    per = (allr[allr["nbytes"] >= LARGE].assign(abs_error=lambda d: d["error"].abs())
           .groupby(["collective", "algorithm"])["abs_error"].median())
    print("median |error| >= 64 KiB by algorithm: "
          + ", ".join(f"{c} {a} {v:.0%}" for (c, a), v in per.items()))
    print(f"# {out}/errors.csv; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
