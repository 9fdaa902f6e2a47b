"""``commbench bringup`` on the multi-host testbed, repeated: does it name the bad host, and only
it, every time, and how long does it take?

    python -m benchmarks.bringup_testbed [--runs 10] [--hosts 4] [--ppn 2] [--slow 3]
        [--rate 400mbit] [--slow-rate 100mbit] [--side both|recv] [--out DIR]

Each run makes a fresh testbed (root: network namespaces, tc), every host's link paced at
``--rate`` both ways and host ``--slow`` at ``--slow-rate`` (both ways, or only what it
receives), runs ``commbench bringup`` across it under the testbed's mpiexec (MPICH over TCP), and
prints the hosts and links the verdict named and the run's wall time. The last line counts the
runs that named exactly the slow host and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.argtypes import OneLineParser, nonneg_int, positive_int
from bench.testbed import launch, net
from bench.testbed.spec import Pace, Testbed
from bench.units import parse_rate
from benchmarks import results
from benchmarks.subrun import add_out, fresh_dir, load

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.bringup_testbed", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=positive_int, default=10)
    ap.add_argument("--hosts", type=positive_int, default=4)
    ap.add_argument("--ppn", type=positive_int, default=2)
    ap.add_argument("--slow", type=nonneg_int, default=3)
    ap.add_argument("--rate", default="400mbit")
    ap.add_argument("--slow-rate", default="100mbit")
    ap.add_argument("--side", choices=("both", "recv"), default="both")
    ap.add_argument("--sizes", default="64KiB,1MiB")
    add_out(ap, "bringup_testbed")
    args = ap.parse_args(argv)
    why = net.missing()
    if why:
        print(f"# skipped: {why}")
        return 1
    out = fresh_dir("bringup_testbed", args.out)
    try:
        fast, slow = parse_rate(args.rate), parse_rate(args.slow_rate)
        if args.slow >= args.hosts:
            raise ValueError(f"--slow {args.slow}: hosts are 0..{args.hosts - 1}")
    except ValueError as e:
        ap.error(str(e))
    pace = tuple((i, Pace(fast, fast)) for i in range(args.hosts) if i != args.slow)
    pace += ((args.slow, Pace(slow if args.side == "both" else fast, slow)),)
    want = [f"bb-{args.slow}"]
    print(f"# {args.hosts} hosts x {args.ppn} ranks, links {args.rate}, host bb-{args.slow} at "
          f"{args.slow_rate} ({args.side}), sizes {args.sizes}")
    print(f"{'run':>4} {'rc':>3} {'wall s':>7}  named hosts / links")
    right = 0
    walls = []
    for i in range(args.runs):
        tb = Testbed(args.hosts, "bb", pace=pace)
        net.up(tb)
        try:
            run = out / f"run{i}"
            argv_ = launch.mpiexec(tb, str(Path(sys.executable).parent / "mpiexec"), args.ppn,
                                   [sys.executable, "-m", "bench", "bringup", "--sizes",
                                    args.sizes, "--out", str(run), "--no-report",
                                    "--no-progress"])
            t0 = time.monotonic()
            r = subprocess.run(argv_, capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, **launch.MPICH_OVER_TCP,
                                    "MPI4PY_RC_THREAD_LEVEL": "multiple"})
            wall = time.monotonic() - t0
        finally:
            net.down("bb")
        if r.returncode not in (0, 1):
            print(f"{i:>4} {r.returncode:>3} {wall:7.1f}  failed: {r.stderr.strip()[-300:]}")
            continue
        v = json.loads((run / "verdict.json").read_text())
        hosts = [h["name"] for h in v["hosts"] if h["status"] != "ok"]
        links = [x["name"] for x in v["links"] if x["status"] != "ok"]
        right += hosts == want and links == [] and not any(
            c["status"] != "ok" for c in v["cluster"])
        walls.append(wall)
        print(f"{i:>4} {r.returncode:>3} {wall:7.1f}  {hosts} / {links}")
    walls.sort()
    med = walls[len(walls) // 2] if walls else float("nan")
    print(f"# named exactly {want} and nothing else: {right} of {args.runs} runs; wall median "
          f"{med:.1f} s, max {max(walls, default=float('nan')):.1f} s; load {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
