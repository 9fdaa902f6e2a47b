"""Does the cost model predict an emulated cluster, and hierarchical's margin over ring on it?

    python -m benchmarks.emulated_accuracy [--scenario scenarios/emulated.yaml] [--out DIR]

1. ``host``: the scenario's sweep on one emulated node holding all its ranks (``topology: 1xP``:
   nothing is delayed), then ``commbench calibrate host --base PROFILE`` fits this host's own
   ``intra`` α/β, γ and o into ``host.yaml``; the slow classes (never crossed) stay the base's.
   Emulation takes the ``intra`` class as the host's link, so this is the profile to emulate with.
2. ``emulated``: the scenario as written, but emulating with ``host.yaml``.
3. ``pred``: ``commbench predict --profile host.yaml`` on the scenario's topology, algorithms and
   sizes; every predicted median paired with the measured one (``reports.sections.prediction``).

Printed: the median and worst |error| at >= 64 KiB, and per collective at the largest size the
ratio ring / hierarchical measured and predicted (hierarchical's margin).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bench.argtypes import OneLineParser
from bench.store.records import load_results
from bench.units import format_size
from benchmarks import results
from benchmarks.subrun import ROOT, add_out, bench, fresh_dir, load
from reports.sections.prediction import pair

cmd = partial(bench, "emulated_accuracy")  # a commbench command, failing as this benchmark

LARGE = 64 << 10


def write(path: Path, sc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(sc, sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.emulated_accuracy", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "emulated.yaml")
    add_out(ap, "emulated-accuracy")
    args = ap.parse_args(argv)
    out = fresh_dir("emulated_accuracy", args.out)
    t0 = time.monotonic()
    sc = yaml.safe_load(args.scenario.read_text())
    emu = dict(sc["emulate"])
    world = max(sc["world_sizes"])
    flat = {**sc, "name": "emulated-host", "emulate": {**emu, "topology": f"1x{world}"}}
    cmd("run", str(write(out / "host.yaml.scenario", flat)), "--out", str(out / "host"),
          "--no-progress")
    cmd("calibrate", str(out / "host"), "--base", emu["profile"], "-o", str(out / "host.yaml"))
    print(f"# host fitted in {time.monotonic() - t0:.0f} s: {out / 'host.yaml'}", flush=True)
    emulated = {**sc, "emulate": {**emu, "profile": str(out / "host.yaml")}}
    cmd("run", str(write(out / "emulated.yaml.scenario", emulated)), "--out", str(out / "emulated"),
          "--no-progress")
    measured = load_results(out / "emulated", samples=False)
    measured = measured[measured["status"] == "ok"]
    sizes = sorted({int(n) for n in measured["nbytes"]})
    cmd("predict", "--profile", str(out / "host.yaml"), "--topology", emu["topology"],
          "--world-sizes", str(world), "--collectives", ",".join(sorted(set(measured["collective"]))),
          "--algorithms", ",".join(sorted(set(measured["algorithm"]))),
          "--sizes", ",".join(f"{s}B" for s in sizes), "--transport", "mpi", "--out", str(out / "pred"))
    both = pd.concat([measured, load_results(out / "pred", samples=False)], ignore_index=True)
    got = pair(both)
    got.to_csv(out / "errors.csv", index=False)
    big = got[got["nbytes"] >= LARGE]
    err = big["error"].abs()
    w = big.loc[err.idxmax()]
    print(f"{len(big)} keys >= {format_size(LARGE)}: median |error| {err.median():.1%}, worst "
          f"{err.max():.1%} ({w['collective']} {w['algorithm']} {format_size(int(w['nbytes']))}); "
          f"predicted below measured in {(big['error'] < 0).mean():.0%} of them")
    top = got[got["nbytes"] == max(sizes)].set_index(["collective", "algorithm"])
    for coll in sorted(set(top.index.get_level_values(0))):
        if (coll, "ring") in top.index and (coll, "hierarchical") in top.index:
            r, h = top.loc[(coll, "ring")], top.loc[(coll, "hierarchical")]
            print(f"{coll} {format_size(max(sizes))}: ring / hierarchical measured "
                  f"{r['measured'] / h['measured']:.2f}, predicted {r['predicted'] / h['predicted']:.2f}")
    print(f"# {out}; {time.monotonic() - t0:.0f} s, load "
          f"{load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
