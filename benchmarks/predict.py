"""Benchmark: how fast ``commbench predict`` prices every collective and algorithm.

    .venv/bin/python -m benchmarks.predict                       # 131072 and 1048576 ranks
    .venv/bin/python -m benchmarks.predict --world-sizes 512,4096 --repeat 5

Per world size: every collective x every algorithm (native included: skipped without a
measured curve) x 30 sizes (8 B .. 4 GiB, float32) on ``--topology`` (default 64x8, scaled out),
timed cold (caches of generated schedules cleared: what one ``predict`` call pays; wall and
this process's CPU seconds, which other load on a shared machine disturbs less) and warm; the
best of ``--repeat``. Also how many cases each method priced and how many were skipped. Then
the whole command, ``commbench predict`` in a process of its own under ``/usr/bin/time -v``
(imports, placement and writing the records included): its wall time and maximum RSS, the
median of ``--repeat``. Targets: the command <= 1 s and <= 200 MB at 131,072 ranks, <= 5 s at
1,048,576 (timings on a shared machine are noisy: the CPU seconds are steadier).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.argtypes import OneLineParser, int_list, positive_int
from bench.costmodel import evaluate
from bench.costmodel.model import parse_topology
from bench.costmodel.predict import predict
from bench.costmodel.profile import load_profile
from benchmarks import results
from kernels import collective as coll


def _clear() -> None:
    """Empty the compiled-schedule cache and every cache of the algorithm files (the schedules
    their closed forms generate)."""
    evaluate.compiled.cache_clear()
    for name, mod in list(sys.modules.items()):
        if name.startswith("kernels.algorithms."):
            for fn in vars(mod).values():
                if callable(getattr(fn, "cache_clear", None)):
                    fn.cache_clear()


def once(profile: str, topology: str, world: int,
         sizes: list[int]) -> tuple[float, float, Counter[str]]:
    """Wall and CPU seconds of one prediction of everything, and its cases by method."""
    prof, cluster = load_profile(profile), parse_topology(topology)
    t0, c0 = time.perf_counter(), time.process_time()
    placed = cluster.place(world)
    how: Counter[str] = Counter()
    for c in coll.names():
        for pr in predict(prof, placed, c, sizes, "float32"):
            how[pr.estimate.method.split(" (")[0] if pr.estimate else "skipped"] += 1
    return time.perf_counter() - t0, time.process_time() - c0, how


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world-sizes", type=int_list, default="131072,1048576")
    ap.add_argument("--profile", default="h100-ib400")
    ap.add_argument("--topology", default="16384x8")
    ap.add_argument("--repeat", type=positive_int, default=3)
    args = ap.parse_args()
    sizes = [8 << i for i in range(30)]
    print(f"# {len(coll.names())} collectives, all their algorithms, 30 sizes 8B..4GiB float32, "
          f"profile {args.profile}, topology {args.topology}")
    print(f"{'ranks':>7} {'cold s':>8} {'cold cpu':>9} {'warm s':>8}  cases by method")
    for w in args.world_sizes:
        cold, cpu, warm = [], [], []
        how: Counter[str] = Counter()
        for _ in range(max(1, args.repeat)):
            _clear()
            t, c, how = once(args.profile, args.topology, w, sizes)
            cold.append(t)
            cpu.append(c)
            warm.append(once(args.profile, args.topology, w, sizes)[0])
        cases = ", ".join(f"{k} {v}" for k, v in sorted(how.items()))
        print(f"{w:>7} {min(cold):8.3f} {min(cpu):9.3f} {min(warm):8.3f}  {cases}")
    print(f"# the command: commbench predict --profile {args.profile} --topology T "
          "--sizes 8B..4GiB (every collective and algorithm), /usr/bin/time -v, "
          f"median of {args.repeat}")
    print(f"{'ranks':>7} {'wall s':>8} {'max RSS MB':>11}")
    for w in args.world_sizes:
        runs = [command(args.profile, args.topology, w) for _ in range(max(1, args.repeat))]
        print(f"{w:>7} {statistics.median(r[0] for r in runs):8.2f} "
              f"{statistics.median(r[1] for r in runs):11.1f}")


def command(profile: str, topology: str, world: int) -> tuple[float, float]:
    """Wall seconds and maximum RSS (MB) of one ``commbench predict`` of ``world`` ranks."""
    per_node = int(topology.split("x")[1].split(":")[0]) if "x" in topology else 1
    topo = f"{max(1, world // per_node)}x{per_node}"
    exe = Path(sys.executable).with_name("commbench")
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["/usr/bin/time", "-v", str(exe), "predict", "--profile", profile,
                              "--topology", topo, "--sizes", "8B..4GiB", "--out",
                              str(Path(tmp) / "run")], capture_output=True, text=True, check=True)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)",
                     got.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", got.stderr)
    assert wall and rss, got.stderr[-500:]
    h, m, sec = wall.groups()
    return int(h or 0) * 3600 + int(m) * 60 + float(sec), int(rss.group(1)) / 1e3


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
