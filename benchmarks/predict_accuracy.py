"""How well the cost model predicts this machine: calibrate on some algorithms and sizes, predict
others.

    python -m benchmarks.predict_accuracy [--rounds 3] [--out runs/predict-accuracy]

Each round is one p = 2 sweep on this host (``commbench run``, self-launched) of every collective
with two sets of algorithms, measured side by side in each case (the harness alternates a case's
algorithms block by block, so both sets see the same state of the machine — a shared machine can
switch speed for stretches, which no calibration can follow across runs):

- ``cal``: all_reduce ring and tree, all_gather ring, reduce_scatter ring, broadcast binomial,
  reduce binomial, alltoall pairwise, at 4 KiB, 16 KiB, ... 16 MiB;
- ``test``: all_reduce halving_doubling, all_gather recursive_doubling and bruck, reduce_scatter
  recursive_halving and direct, broadcast chain and scatter_allgather, reduce rabenseifner,
  alltoall bruck and direct, at 8 KiB, 32 KiB, ... 8 MiB (other algorithms, other sizes, each
  between two calibrated ones: the α-β model has no cache effects, so it is not asked to
  extrapolate past the largest calibrated size, where caches stop holding the buffers and times
  grow faster than the bytes).

``commbench calibrate`` fits a profile to the round's ``cal`` records only, and ``commbench predict
--profile ... --topology 1x2`` predicts the ``test`` algorithms and sizes, paired with the measured
medians (``reports.sections.prediction.pair``). Two figures: ``same round`` (calibrated and measured
in one run) and ``next round`` (the profile of round i predicts round i+1's test records: another
run, minutes later). Printed: median and worst |error| at >= 64 KiB, per algorithm too.
"""

from __future__ import annotations

import json
import shutil
import time
from functools import partial
from pathlib import Path

import pandas as pd

from bench.store.records import load_results
from bench.units import format_size
from benchmarks import results
from benchmarks.subrun import bench, command_line, each
from reports.sections.prediction import pair

cmd = partial(bench, "predict_accuracy")  # a commbench command, failing as this benchmark

LARGE = 64 << 10
CAL = {"all_reduce": ["ring", "tree"], "all_gather": ["ring"], "reduce_scatter": ["ring"],
       "broadcast": ["binomial"], "reduce": ["binomial"], "alltoall": ["pairwise"]}
TEST = {"all_reduce": ["halving_doubling"], "all_gather": ["recursive_doubling", "bruck"],
        "reduce_scatter": ["recursive_halving", "direct"], "broadcast": ["chain", "scatter_allgather"],
        "reduce": ["rabenseifner"], "alltoall": ["bruck", "direct"]}
CAL_SIZES = [4 << (10 + 2 * i) for i in range(7)]  # 4 KiB, 16 KiB, ... 16 MiB
TEST_SIZES = [2 * s for s in CAL_SIZES[:-1]]  # 8 KiB ... 8 MiB: between calibrated sizes
SCENARIO = """\
name: accuracy
collectives: [{colls}]
algorithms:
{algs}
transports: [mpi]
world_sizes: [2]
sizes: [{sizes}]
dtypes: [float32]
ops: [sum]
check: false
timing: {{warmup: 3, time_budget_ms: 120, min_iters: 10, max_iters: 400, repetitions: 4}}
"""


def scenario() -> str:
    algs = "\n".join(f"  {c}: [{', '.join(CAL[c] + TEST[c])}]" for c in CAL)
    sizes = ", ".join(f"{n}B" for n in sorted(CAL_SIZES + TEST_SIZES))
    return SCENARIO.format(colls=", ".join(CAL), algs=algs, sizes=sizes)


def split(run: Path, into: Path, keep: dict[str, list[str]], sizes: list[int]) -> None:
    """A run directory holding only ``run``'s records of ``keep``'s algorithms at ``sizes``."""
    into.mkdir()
    for name in ("meta.json", "canary.jsonl"):  # the canary's memcpy prices local copies
        if (run / name).exists():
            shutil.copy(run / name, into / name)
    with (run / "results.jsonl").open() as f, (into / "results.jsonl").open("w") as out:
        for line in f:
            rec = json.loads(line)
            if rec.get("algorithm") in keep.get(rec.get("collective"), ()) and rec.get("nbytes") in sizes:
                out.write(line)


def one_round(out: Path, i: int) -> Path:
    """Round i: the sweep, its cal/test split, the profile fitted to cal."""
    d = out / f"round{i}"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(scenario())
    cmd("run", str(d / "sweep.yaml"), "--out", str(d / "sweep"), "--no-progress")
    split(d / "sweep", d / "cal", CAL, CAL_SIZES)
    split(d / "sweep", d / "test", TEST, TEST_SIZES)
    cmd("calibrate", str(d / "cal"), "-o", str(d / "profile.yaml"))
    return d


def errors(profile: Path, test: Path, into: Path) -> pd.DataFrame:
    """``test``'s records paired with what ``profile`` predicts for them."""
    cmd("predict", "--profile", str(profile), "--topology", "1x2",
          "--collectives", ",".join(TEST), "--algorithms",
          ",".join(sorted({a for v in TEST.values() for a in v})),
          "--sizes", ",".join(f"{s}B" for s in TEST_SIZES), "--transport", "mpi", "--out", str(into))
    measured = load_results(test, samples=False)
    measured = measured[measured["status"] == "ok"]
    both = pd.concat([measured, load_results(into, samples=False)], ignore_index=True)
    both["ranks_per_node"] = 0  # p = 2 on one host: the measured run may say 2, the model 2 or none
    return pair(both)


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
    args, out = command_line("predict_accuracy", __doc__, "rounds", 3, argv)
    t0 = time.monotonic()
    rounds = list(each(args.rounds, "round", "measured and fitted", partial(one_round, out), t0))
    same = []
    for i, d in enumerate(rounds):
        got = errors(d / "profile.yaml", d / "test", d / "pred").assign(round=i, how="same round")
        print(summary(got, f"round {i}, same round"))
        same.append(got)
    nxt = []
    for i, d in enumerate(rounds[:-1]):
        got = errors(d / "profile.yaml", rounds[i + 1] / "test", d / "pred-next").assign(
            round=i + 1, how="next round")
        print(summary(got, f"round {i} -> {i + 1}, next round"))
        nxt.append(got)
    for label, frames in (("same round", same), ("next round", nxt)):
        if not frames:
            continue
        allr = pd.concat(frames, ignore_index=True)
        print(summary(allr, f"{label}, pooled over {len(frames)}"))
        per = (allr[allr["nbytes"] >= LARGE].assign(abs_error=lambda d: d["error"].abs())
               .groupby(["collective", "algorithm"])["abs_error"].median())
        print(f"{label}: median |error| >= 64 KiB by algorithm: "
              + ", ".join(f"{c} {a} {v:.0%}" for (c, a), v in per.items()))
    pd.concat(same + nxt, ignore_index=True).to_csv(out / "errors.csv", index=False)
    print(f"# {out}/errors.csv; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
