"""Does the MPI eager/rendezvous switch fix mid-size all_reduce predictions? Calibrated on 2
testbed hosts, predicted and measured on more.

    python -m benchmarks.eager_switch [--rounds 3] [--rate 400mbit] [--hosts 2,4]
        [--repeats 20] [--iters 20] [--thresholds default,16384] [--out DIR]

One testbed (root: network namespaces, tc) of the largest host count, every link paced at
``--rate`` both ways, MPICH over TCP (``bench.testbed.launch.MPICH_OVER_TCP``), one rank per
host. Each round:

- ``commbench probe`` of hosts 0 and 1 (one pair, ping-pong) at :data:`PROBE_SIZES`: powers of
  two and sizes just above the usual eager limits (8 and 16 KiB: ``UCX_RNDV_THRESH=8192`` as
  UCX-Py sets it, docs.rapids.ai/api/ucxx/stable/configuration; 64 KiB; 128 KiB:
  ``MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE`` = 131072 in MPICH 5.0.2's ``mpivars``, whose ch4 ofi
  ``MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD`` = -1 adds no MPICH handshake below the provider's
  largest message);
- ``commbench run`` of all_reduce ``ring`` and ``halving_doubling`` on each host count at
  16 KiB ... 1 MiB.

The whole is done under each ``--thresholds`` value of MPICH's
``MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD``: unset (MPICH's default: no handshake of its own over
TCP) and 16384 (a handshake above 16 KiB, a switch known to be there). For each,
``commbench calibrate`` over every round's probe, twice: with the switch (the change-point
fit, bench/costmodel/eager.py) and ``--no-mpi-switch`` (α-β only, as before). Each measured case
(median over rounds of the run's median time) is predicted by both profiles (the cost model's
evaluator, one rank per node); error = predicted / measured - 1 (negative: under-predicted).
Printed: the fitted switch or why none, the probe's median curve, and the table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.argtypes import OneLineParser, positive_int
from bench.costmodel.calibrate import placed_of
from bench.costmodel.net import Net
from bench.costmodel.predict import Estimate, estimate_case
from bench.costmodel.profile import Profile, load_profile
from bench.store.records import load_results
from bench.testbed import launch, net
from bench.testbed.spec import Pace, Testbed
from bench.units import format_size, parse_rate
from benchmarks import results
from benchmarks.subrun import add_out, bench, fresh_dir, load
from kernels.algorithm import Problem, get_algorithm
from kernels.ops import ITEMSIZE

ROOT = Path(__file__).resolve().parent.parent
TAG = "es"
PROBE_SIZES = ("8B,1KiB,4KiB,8KiB,16KiB,24KiB,32KiB,48KiB,64KiB,96KiB,128KiB,192KiB,256KiB,"
               "512KiB,1MiB")
ALGORITHMS = "ring,halving_doubling"
MIN, MAX = "16KiB", "1MiB"
# MPICH ch4 ofi: messages above it take an MPICH-level handshake first (-1, the default: only
# above the provider's largest message; MPICH 5.0.2 ``mpivars``)
THRESHOLD = "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD"


def _job(tb: Testbed, hosts: int, extra: dict[str, str], argv: list[str]) -> None:
    """``python -m bench ARGV`` as one rank on each of the first ``hosts`` hosts, with the
    environment ``extra`` (MPICH settings) added."""
    cmd = launch.mpiexec(tb, str(Path(sys.executable).parent / "mpiexec"), 1,
                         [sys.executable, "-m", "bench", *argv], hosts=list(range(hosts)))
    env = {**os.environ, **launch.MPICH_OVER_TCP, "MPI4PY_RC_THREAD_LEVEL": "multiple",
           "PYTHONPATH": str(ROOT), **extra}
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if r.returncode != 0:
        raise SystemExit(f"eager_switch: {' '.join(argv[:1])} on {hosts} hosts failed "
                         f"({r.returncode}): {r.stderr.strip()[-300:]}")


def _measured(runs: list[Path]) -> dict[tuple[int, str, int], dict[str, Any]]:
    """(world, algorithm, bytes) -> a record, its time the median over the runs' medians."""
    by: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for run in runs:
        for r in load_results(run, samples=False).to_dict("records"):
            if r.get("kind", "collective") == "collective" and r.get("status") == "ok":
                by.setdefault((int(r["world_size"]), str(r["algorithm"]), int(r["nbytes"])),
                              []).append(r)
    return {k: {**v[0], "time_s": float(np.median([x["time_us_median"] for x in v])) / 1e6,
                "rounds": len(v)} for k, v in by.items()}


def _predict(rec: dict[str, Any], prof: Profile) -> Estimate:
    p = int(rec["world_size"])
    placed = placed_of(p, rec.get("ranks_per_node"))
    pr = Problem(placed.topology, int(rec["count"]), ITEMSIZE[str(rec["dtype"])], "all_reduce", 0)
    est = estimate_case(get_algorithm("all_reduce", str(rec["algorithm"])), pr, Net(placed, prof))
    if isinstance(est, str):
        raise SystemExit(f"eager_switch: no prediction for {rec['algorithm']} at p = {p}: {est}")
    return est


def _switch_lines(prof: Profile) -> list[str]:
    how = (prof.fitted or {}).get("mpi", {})
    curve = ", ".join(f"{format_size(n)} {1e6 * t:.0f}" for n, t in
                      zip(how.get("sizes", []), how.get("median_latency_s", [])))
    out = [f"# probe (2 hosts, one-way latency us, median per size over rounds): {curve}"]
    if prof.mpi is None:
        return [*out, f"# no switch fitted: {how.get('why')}"]
    m, link = prof.mpi, prof.links["inter"]
    return [*out, f"# fitted switch: eager limit {format_size(int(m.eager_limit))}, rendezvous "
            f"{1e6 * m.rendezvous:.0f} us, eager copy {m.eager_per_byte:.3g} s/B, p = "
            f"{how['p_bonferroni']:.2g}; inter alpha {1e6 * link.alpha:.0f} us, beta "
            f"{link.beta / 1e6:.1f} MB/s"]


def _setting(tb: Testbed, args: argparse.Namespace, counts: list[int], out: Path,
             env: dict[str, str]) -> None:
    """One MPI setting: its rounds, its two profiles, its table."""
    probes: list[Path] = []
    runs: list[Path] = []
    t0 = time.monotonic()
    for i in range(args.rounds):
        probes.append(out / f"probe{i}")
        _job(tb, 2, env, ["probe", "--out", str(probes[-1]), "--sizes", PROBE_SIZES,
                          "--repeats", str(args.repeats), "--confirm-max", "0", "--no-progress"])
        for h in counts:
            runs.append(out / f"run{i}-{h}")
            _job(tb, h, env, ["run", "-c", "all_reduce", "-a", ALGORITHMS, "-t", "mpi", "-b", MIN,
                              "-e", MAX, "-i", str(args.iters), "-w", "3", "--out",
                              str(runs[-1]), "--no-report", "--no-progress"])
        print(f"# round {i} done [{time.monotonic() - t0:.0f} s, load {load()}]", flush=True)
    profs = {}
    for name, extra in (("switch", []), ("alpha-beta", ["--no-mpi-switch"])):
        path = out / f"{name}.yaml"
        bench("eager_switch", "calibrate", *map(str, probes), "-o", str(path), *extra)
        profs[name] = load_profile(path)
    for line in _switch_lines(profs["switch"]):
        print(line)
    print(f"{'hosts':>5} {'algorithm':<17} {'size':>7} {'measured ms':>11} {'a-b ms':>8} "
          f"{'a-b err':>8} {'switch ms':>9} {'sw err':>8} {'excess/step':>11}")
    for (p, alg, nb), rec in sorted(_measured(runs).items()):
        m = rec["time_s"]
        ab, sw = _predict(rec, profs["alpha-beta"]), _predict(rec, profs["switch"])
        print(f"{p:>5} {alg:<17} {format_size(nb):>7} {1e3 * m:11.2f} {1e3 * ab.time_s:8.2f} "
              f"{100 * (ab.time_s / m - 1):+7.0f}% {1e3 * sw.time_s:9.2f} "
              f"{100 * (sw.time_s / m - 1):+7.0f}% {1e3 * (m - ab.time_s) / ab.steps:11.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.eager_switch", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=positive_int, default=3)
    ap.add_argument("--rate", default="400mbit")
    ap.add_argument("--hosts", default="2,4", help="host counts to measure, comma-separated")
    ap.add_argument("--repeats", type=positive_int, default=20, help="probe samples per size")
    ap.add_argument("--iters", type=positive_int, default=20, help="timed iterations per case")
    ap.add_argument("--thresholds", default="default,16384",
                    help=f"values of {THRESHOLD} to measure under, comma-separated (default: "
                         "MPICH's own)")
    add_out(ap, "eager_switch")
    args = ap.parse_args(argv)
    why = net.missing()
    if why:
        print(f"# skipped: {why}")
        return 1
    try:
        rate = parse_rate(args.rate)
        counts = sorted({int(h) for h in args.hosts.split(",")})
        if counts[0] < 2:
            raise ValueError("--hosts: at least 2 hosts each")
        settings = [t.strip() for t in args.thresholds.split(",")]
        if any(t != "default" and not t.isdigit() for t in settings):
            raise ValueError("--thresholds: 'default' or a number of bytes each")
    except ValueError as e:
        ap.error(str(e))
    out = fresh_dir("eager_switch", args.out)
    tb = Testbed(max(counts), TAG, pace=tuple((i, Pace(rate, rate)) for i in range(max(counts))))
    print(f"# links {args.rate} both ways, 1 rank per host, MPICH over TCP; calibrated on hosts "
          f"0-1; {args.rounds} rounds; a loaded machine (2 cores shared with other jobs: "
          f"every figure is a median over rounds of medians)")
    print("# excess/step: (measured - alpha-beta) / the schedule's steps, ms: a cost per step "
          "that does not grow with the size is not a protocol's")
    net.up(tb)
    try:
        for t in settings:
            print(f"## {THRESHOLD}={t}" + (" (unset)" if t == "default" else ""))
            _setting(tb, args, counts, out / t, {} if t == "default" else {THRESHOLD: t})
    finally:
        net.down(TAG)
    print(f"# load at the end {load()}; runs in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
