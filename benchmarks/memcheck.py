"""Benchmark: the memory pre-check's prediction against each rank's measured peak.

    .venv/bin/python -m benchmarks.memcheck   # all_reduce, all_gather; f32, f16; 256 MiB, 1 GiB
    .venv/bin/python -m benchmarks.memcheck --sizes 256MiB --collectives alltoall

Each case runs ``commbench run`` on 2 ranks under the embedded mpiexec, every rank wrapped in
``/usr/bin/time -f %M`` (peak resident set, KB), with ``native`` and ``ring`` (or the
collective's first algorithm) and one timed iteration; prints predicted and measured peak per
rank (the larger of the two ranks) and their ratio. Needs about 4x the largest size per rank.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.argtypes import OneLineParser
from bench.collective.memory import rank_bytes
from bench.units import format_size, parse_size
from benchmarks import results
from kernels.algorithm import algorithm_names
from kernels.collective import resolve
from kernels.ops import ITEMSIZE

SCENARIO = """name: memcheck
collectives: [{coll}]
world_sizes: [2]
sizes: [{size}]
algorithms: [{algs}]
dtypes: [{dtype}]
timing: {{warmup: 1, iters: 1, repetitions: 1}}
"""


def peak_per_rank(coll: str, size: int, dtype: str, tmp: Path) -> int:
    names = algorithm_names(coll)
    algs = ", ".join(["native", "ring" if "ring" in names else names[-1]])
    sc = tmp / f"{coll}-{dtype}-{size}.yaml"
    sc.write_text(SCENARIO.format(coll=coll, size=size, algs=algs, dtype=dtype))
    exe = Path(sys.executable).parent
    cmd = [str(exe / "mpiexec"), "-n", "2", "/usr/bin/time", "-f", "PEAK %M",
           sys.executable, "-m", "bench", "run", str(sc), "--out", str(tmp / sc.stem),
           "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
    peaks = [int(x) * 1024 for x in re.findall(r"PEAK (\d+)", out.stderr)]
    return max(peaks)


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collectives", default="all_reduce,all_gather")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--sizes", default="256MiB,1GiB")
    args = ap.parse_args()
    print(f"{'collective':<15} {'dtype':<8} {'size':>7} {'predicted':>10} {'measured':>10} "
          f"{'meas/pred':>9} {'meas/size':>9}")
    with tempfile.TemporaryDirectory() as d:
        for coll in args.collectives.split(","):
            spec = resolve(coll)
            for dtype in args.dtypes.split(","):
                for size in (parse_size(s) for s in args.sizes.split(",")):
                    pred = rank_bytes(spec, size // ITEMSIZE[dtype], ITEMSIZE[dtype], 2)
                    meas = peak_per_rank(spec.name, size, dtype, Path(d))
                    print(f"{spec.name:<15} {dtype:<8} {format_size(size):>7} {pred / 1e9:>9.2f}G "
                          f"{meas / 1e9:>9.2f}G {meas / pred:>9.2f} {meas / size:>9.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
