"""How well ``commbench advise`` predicts training steps on this machine: predicted against
measured step time for every strategy of ``scenarios/training.yaml`` at 2 and 4 ranks.

    python -m benchmarks.advise_accuracy [--repeats 2] [--out runs/advise-accuracy]

Each repeat runs the recipe of docs/advise.md end to end, with ``commbench`` from this checkout:

1. ``run scenarios/advise-calibrate.yaml`` (torch/gloo collectives at 2 and 4 ranks, 1 KiB to
   4 MiB) and ``calibrate`` it into a profile (``--base cpu-25gbe``: the device block, including
   ``overlaps_communication: false``);
2. ``run scenarios/training.yaml --world-sizes 1,2,4`` (every strategy on gpt-tiny and mlp);
3. ``advise --from`` the training run with that profile at its world sizes 2 and 4: compute from
   each strategy's world-size-1 step, communication from the profile.

Printed: per repeat and pooled, the median and worst |error| at each world size (error =
predicted / measured - 1 of the median step), and the strategies by median |error|. Nothing of
the measured runs feeds the prediction except the world-size-1 steps and the calibration sweep.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pandas as pd

from bench.store.records import iter_records
from benchmarks import results
from benchmarks.subrun import bench, command_line, each

cmd = partial(bench, "advise_accuracy")


def one_repeat(out: Path, i: int) -> pd.DataFrame:
    d = out / f"repeat{i}"
    cmd("run", "scenarios/advise-calibrate.yaml", "--out", str(d / "calib"), "--no-progress")
    cmd("calibrate", str(d / "calib"), "-o", str(d / "cpu.yaml"), "--base", "cpu-25gbe")
    cmd("run", "scenarios/training.yaml", "--world-sizes", "1,2,4", "--out", str(d / "train"),
        "--no-progress")
    cmd("advise", "--from", str(d / "train"), "--profile", str(d / "cpu.yaml"), "--world-sizes",
        "2,4", "--out", str(d / "advise"))
    return pd.DataFrame([{"repeat": i, "model": r["model"], "strategy": r["strategy"],
                          "world_size": r["world_size"], "measured_ms": r["measured_step_time_ms"],
                          "predicted_ms": r["step_time_ms"], "error": r["prediction_error"]}
                         for r in iter_records(d / "advise") if r.get("validation")])


def summary(df: pd.DataFrame, label: str) -> list[str]:
    out = []
    for w, g in df.groupby("world_size"):
        err = g["error"].abs()
        worst = g.loc[err.idxmax()]
        out.append(f"{label}, {w} ranks: {len(g)} cases, median |error| {err.median():.0%}, worst "
                   f"{err.max():.0%} ({worst['model']} {worst['strategy']}: measured "
                   f"{worst['measured_ms']:.3g} ms, predicted {worst['predicted_ms']:.3g} ms)")
    return out


def main(argv: list[str] | None = None) -> int:
    args, out = command_line("advise_accuracy", __doc__, "repeats", 2, argv)
    t0 = time.monotonic()
    frames = []
    for i, frame in enumerate(each(args.repeats, "repeat", "measured and predicted",
                                   partial(one_repeat, out), t0)):
        frames.append(frame)
        for line in summary(frame, f"repeat {i}"):
            print(line, flush=True)
    allr = pd.concat(frames, ignore_index=True)
    for line in summary(allr, f"pooled over {len(frames)}"):
        print(line)
    per = (allr.assign(abs_error=allr["error"].abs())
           .groupby(["world_size", "strategy"])["abs_error"].median())
    for w in sorted(allr["world_size"].unique()):
        print(f"{w} ranks, median |error| by strategy: "
              + ", ".join(f"{s} {v:.0%}" for (ws, s), v in per.items() if ws == w))
    allr.to_csv(out / "errors.csv", index=False)
    print(f"# {out}/errors.csv; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
