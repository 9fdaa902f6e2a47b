"""Multi-channel rail-aligned ring against the single ring, emulated and predicted.

    python -m benchmarks.channels [--topology 2x2:nics=2] [--profile emulated-slow] [--out DIR]

1. ``emulated``: all_reduce, all_gather and reduce_scatter with ``ring`` and ``ring_channels``
   at 1, 4 and 16 MiB on an emulated cluster (default 2 nodes x 2 ranks, 2 NICs per node:
   the single ring crosses each node boundary as one flow on one NIC, the two channels as two
   flows on both), every inter-node message delayed as the cost model prices it on the profile.
2. ``pred``: ``commbench predict`` of the same cases on the same profile and topology.

Printed per collective and size: both medians measured and the ring / ring_channels ratio
measured and predicted (the channel gain; about the number of NICs a node's ranks can use at
large sizes, less where the per-message cost of k messages a step still counts).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from bench.argtypes import OneLineParser, positive_int
from bench.store.records import load_results
from bench.units import format_size
from benchmarks import results
from benchmarks.subrun import add_out, bench, fresh_dir, load

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
ALGS = ("ring", "ring_channels")


def _medians(run: Path) -> dict[tuple[str, int, str], float]:
    df = load_results(run, samples=False)
    df = df[df["status"] == "ok"]
    return {(r.collective, int(r.nbytes), r.algorithm): float(r.time_us_median)
            for r in df.itertuples()}


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.channels", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="2x2:nics=2")
    ap.add_argument("--profile", default="emulated-slow")
    ap.add_argument("--world", type=positive_int, default=4)
    add_out(ap, "channels")
    args = ap.parse_args(argv)
    out = fresh_dir("channels", args.out)
    t0 = time.monotonic()
    sc = {"name": "channels", "description": "ring vs ring_channels, emulated",
          "emulate": {"profile": args.profile, "topology": args.topology},
          "world_sizes": [args.world], "collectives": list(COLLECTIVES),
          "algorithms": {c: list(ALGS) for c in COLLECTIVES},
          "sizes": {"min": "1MiB", "max": "16MiB", "factor": 4},
          "timing": {"warmup": 1, "min_iters": 5, "time_budget_ms": 100, "repetitions": 2}}
    (out / "channels.yaml").write_text(yaml.safe_dump(sc, sort_keys=False))
    bench("channels", "run", str(out / "channels.yaml"), "--out", str(out / "emulated"),
          "--no-progress")
    measured = _medians(out / "emulated")
    sizes = sorted({n for _, n, _ in measured})
    bench("channels", "predict", "--profile", args.profile, "--topology", args.topology,
          "--world-sizes", str(args.world), "--collectives", ",".join(COLLECTIVES),
          "--algorithms", ",".join(ALGS), "--sizes", ",".join(f"{s}B" for s in sizes),
          "--out", str(out / "pred"))
    predicted = _medians(out / "pred")
    print(f"# p={args.world} on {args.topology}, profile {args.profile}; times: median us")
    print(f"{'collective':<15} {'size':>6} {'ring':>10} {'channels':>10} {'measured':>9} "
          f"{'predicted':>9}")
    for c in COLLECTIVES:
        for n in sizes:
            ring, chan = measured[(c, n, "ring")], measured[(c, n, "ring_channels")]
            pred = predicted[(c, n, "ring")] / predicted[(c, n, "ring_channels")]
            print(f"{c:<15} {format_size(n):>6} {ring:10.0f} {chan:10.0f} {ring / chan:9.2f} "
                  f"{pred:9.2f}")
    print(f"# {out}; {time.monotonic() - t0:.0f} s, load {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
