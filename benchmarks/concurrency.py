"""Concurrent communicators and overlap, measured: each group alone and beside the others, and
a collective overlapped with a GEMM sized to it (OSU's overall, compute, pure comm, overlap %).

    python -m benchmarks.concurrency [--out DIR] [--testbed | --no-testbed] [--rate 400mbit]

On this host, 4 ranks: scenarios/concurrent.yaml (a TP all_reduce inside each of 2 nodes of 2
ranks beside a DP ring reduce_scatter across them: every rank in both, a thread per
communicator), an all-to-all on ranks 0-1 beside a reduce_scatter on ranks 2-3 (no rank in both),
and scenarios/overlap.yaml (MPI_Iallreduce progressed by MPI, a commbench ring on a progress
thread). With ``--testbed`` (root: network namespaces, tc), two testbed hosts of 2 ranks whose
links are paced at ``--rate``: two 2-rank ring all_reduces, each across both hosts, so both cross
the same two links, next to the shared-link model (:func:`together_s`: the bandwidth term times
the flows on the link).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.argtypes import OneLineParser
from bench.concurrent.table import group_rows, overlap_rows
from bench.store.records import iter_records
from bench.units import format_size, parse_rate
from benchmarks import results
from benchmarks.subrun import ROOT, add_out, bench, fresh_dir, load

DISJOINT = """kind: concurrent
description: an all-to-all on ranks 0-1 beside a reduce_scatter on ranks 2-3
world_size: 4
sizes: [64KiB, 1MiB]
groups:
  - {name: ep, collective: alltoall, members: [[0, 1]]}
  - {name: dp, collective: reduce_scatter, members: [[2, 3]]}
"""
SHARED = """kind: concurrent
description: two ring all_reduces across the same two paced host links
sizes: [{size}]
groups:
  - {{name: a, collective: all_reduce, algorithm: ring, members: [[0, 2]]}}
  - {{name: b, collective: all_reduce, algorithm: ring, members: [[1, 3]]}}
"""


def together_s(alone_s: float, nbytes: float, bytes_per_s: float, flows: int) -> float:
    """The shared-link model: a communicator that sends ``nbytes`` over a link of ``bytes_per_s``
    alone in ``alone_s``, beside ``flows - 1`` other equal flows on that link (each alive as long
    as it), pays the bandwidth term ``flows`` times over, its latency and software parts unchanged:

        together = alone + (flows - 1) * nbytes / bytes_per_s

    the per-step rule of :mod:`bench.costmodel.net` (a resource's capacity over its concurrent
    flows) applied across communicators."""
    if flows < 1 or bytes_per_s <= 0:
        raise ValueError(f"flows must be >= 1 and bytes_per_s > 0, got {flows}, {bytes_per_s}")
    return alone_s + (flows - 1) * nbytes / bytes_per_s


def slowdown(alone_s: float, nbytes: float, bytes_per_s: float, flows: int) -> float:
    """``together_s`` over ``alone_s``."""
    return together_s(alone_s, nbytes, bytes_per_s, flows) / alone_s


def _groups(run: Path, title: str, rate: float | None = None) -> None:
    recs = list(iter_records(run, samples=False))
    sent = {(r["group"], tuple(r["members"]), int(r["nbytes"])): r.get("bytes_sent_max")
            for r in recs if r.get("kind") == "concurrent" and r.get("mode") == "alone"}
    how = next((r["concurrency"] for r in recs if r.get("kind") == "concurrent"), "")
    print(f"\n## {title}\n# {how}")
    head = f"{'group':<6} {'ranks':<6} {'collective':<15} {'algorithm':<9} {'size':>7} " \
           f"{'alone us':>10} {'together us':>12} {'slowdown':>9}"
    print(head + (f" {'modelled':>9}" if rate else ""))
    for r in group_rows(recs):
        line = (f"{r.group:<6} {','.join(map(str, r.members)):<6} {r.collective:<15} "
                f"{r.algorithm:<9} {format_size(r.nbytes):>7} {r.alone_us:>10.1f} "
                f"{r.together_us:>12.1f} {r.slowdown:>9.2f}")
        nbytes = sent.get((r.group, r.members, r.nbytes))
        if rate and nbytes:  # the other group's flow shares each link this one crosses
            line += f" {slowdown(r.alone_us * 1e-6, nbytes, rate, 2):>9.2f}"
        print(line)


def _overlap(run: Path) -> None:
    print("\n## overlap (OSU: each rank's mean, averaged over ranks)")
    print(f"{'collective':<11} {'algorithm':<9} {'progress':<12} {'size':>7} {'overall us':>11} "
          f"{'compute us':>11} {'comm us':>10} {'overlap %':>10} {'gemm n':>7}")
    for o in overlap_rows(iter_records(run, samples=False)):
        print(f"{o['collective']:<11} {o['algorithm']:<9} {o['progress']:<12} "
              f"{format_size(int(o['nbytes'])):>7} {o['overall_us']:>11.1f} {o['compute_us']:>11.1f} "
              f"{o['comm_us']:>10.1f} {o['overlap_pct']:>10.1f} {o['gemm_n']:>7}")
        print(f"#   {o['progress_how']}")


def _testbed(out: Path, rate_text: str, size: str) -> Path | None:
    from bench.testbed import launch, net
    from bench.testbed.spec import Pace, Testbed

    why = net.missing()
    if why:
        print(f"\n# testbed skipped: {why}")
        return None
    rate = parse_rate(rate_text)
    (out / "shared.yaml").write_text(SHARED.format(size=size))
    tb = Testbed(2, "cc", default=Pace(rate, rate))
    net.up(tb)
    try:
        argv = launch.mpiexec(tb, str(Path(sys.executable).parent / "mpiexec"), 2,
                              [sys.executable, "-m", "bench", "run", str(out / "shared.yaml"),
                               "--out", str(out / "testbed"), "--no-report", "--no-progress"])
        r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, **launch.MPICH_OVER_TCP, "PYTHONPATH": str(ROOT)})
    finally:
        net.down("cc")
    if r.returncode != 0:
        raise SystemExit(f"concurrency: testbed run failed ({r.returncode}): "
                         + " | ".join(r.stderr.strip().splitlines()[-3:]))
    return out / "testbed"


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.concurrency", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--testbed", action=argparse.BooleanOptionalAction, default=True,
                    help="also the shared link of two testbed hosts (needs root; default on)")
    ap.add_argument("--rate", default="400mbit", help="the testbed links' pace (400mbit)")
    ap.add_argument("--size", default="1MiB", help="the testbed case's size (1MiB)")
    add_out(ap, "concurrency")
    args = ap.parse_args(argv)
    out = fresh_dir("concurrency", args.out)
    (out / "disjoint.yaml").write_text(DISJOINT)
    runs: dict[str, Any] = {
        "tp-dp": ("scenarios/concurrent.yaml", "TP all_reduce in nodes beside DP reduce_scatter "
                  "across them (4 ranks, 2 nodes of 2)"),
        "disjoint": (str(out / "disjoint.yaml"), "alltoall on ranks 0-1 beside reduce_scatter on "
                     "ranks 2-3"),
        "overlap": ("scenarios/overlap.yaml", ""),
    }
    for name, (scenario, _) in runs.items():
        bench("concurrency", "run", scenario, "--out", str(out / name), "--no-report",
              "--no-progress")
    _groups(out / "tp-dp", runs["tp-dp"][1])
    _groups(out / "disjoint", runs["disjoint"][1])
    _overlap(out / "overlap")
    if args.testbed:
        tb = _testbed(out, args.rate, args.size)
        if tb is not None:
            _groups(tb, f"testbed: 2 hosts x 2 ranks, links {args.rate} each way; two ring "
                        "all_reduces across the same links; modelled: the shared-link model",
                    parse_rate(args.rate))
    print(f"\n# load {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
