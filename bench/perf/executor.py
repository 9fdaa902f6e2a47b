"""Benchmark: the schedule executor against a hand-written ring, and ring against MPI_Allreduce.

Run under mpiexec (the ratios are within one run, algorithms alternating, so noise cancels):

    .venv/bin/mpiexec -n 2 .venv/bin/python -m bench.perf.executor
    .venv/bin/mpiexec -n 4 .venv/bin/python -m bench.perf.executor --sizes 1KiB,4KiB,64KiB,1MiB,16MiB

Prints, per size, the median time of each variant (max over ranks per iteration) and the ratios
executor/hand-written (target <= 1.05 at >= 64 KiB) and native/ring busbw (target ring >= 0.95x).
"""

from __future__ import annotations

import argparse

import numpy as np
from mpi4py import MPI

import kernels.algorithms  # noqa: F401
from bench import data
from bench.harness import Env, time_plans
from bench.perf.handring import HandRing
from bench.ranks import worst_over_ranks
from bench.scenario import Timing
from bench.units import format_size, parse_size
from kernels.algorithm import ALGORITHMS, Problem
from kernels.ops import OPS
from kernels.topology import Topology
from kernels.transports.mpi import MpiTransport


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1KiB,4KiB,64KiB,256KiB,1MiB,4MiB,16MiB")
    ap.add_argument("--budget-ms", type=float, default=400.0)
    ap.add_argument("--repetitions", type=int, default=8)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    tr = MpiTransport(comm)
    topo = Topology.flat(comm.size)
    env = Env(comm, tr, topo, {})
    timing = Timing(warmup=5, time_budget_ms=args.budget_ms, min_iters=40, max_iters=20000,
                    repetitions=args.repetitions)
    names = ("executor(ring)", "hand-written ring", "native", "best schedule")
    if comm.rank == 0:
        print(f"# p={comm.size} float32 sum; median us (max over ranks per iteration), "
              f"{args.repetitions} alternating blocks")
        print(f"{'size':>8} " + " ".join(f"{n:>18}" for n in names[:3])
              + f" {'exec/hand':>10} {'ring/native busbw':>18} {'best/native lat':>16}")
    for size in (parse_size(s) for s in args.sizes.split(",")):
        count = size // 4
        buf, scratch = tr.allocate(count, "float32"), tr.allocate(count, "float32")
        tr.upload(buf, data.fill(comm.rank, comm.size, count, "sum").astype("float32"))
        problem = Problem(topo, count, 4)
        plans = {
            "ring": tr.compile(ALGORITHMS.get("ring").schedule(problem, comm.rank), buf, scratch,
                               OPS["sum"]),
            "hand": HandRing(tr.comm, buf, scratch),
            "native": tr.vendor(buf, OPS["sum"]),
        }
        for other in ("tree", "halving_doubling", "naive"):
            plans[other] = tr.compile(ALGORITHMS.get(other).schedule(problem, comm.rank), buf,
                                      scratch, OPS["sum"])
        samples = time_plans(env, timing, list(plans.values()))
        med = {}
        for name, s in zip(plans, samples):
            worst = worst_over_ranks(comm, s)
            if worst is not None:
                med[name] = float(np.median(worst))
        for plan in plans.values():
            plan.close()
        if comm.rank == 0:
            best = min(("ring", "tree", "halving_doubling", "naive"), key=med.__getitem__)
            print(f"{format_size(size):>8} {med['ring']:>18.1f} {med['hand']:>18.1f} "
                  f"{med['native']:>18.1f} {med['ring'] / med['hand']:>10.3f} "
                  f"{med['native'] / med['ring']:>18.3f} "
                  f"{med[best] / med['native']:>10.2f} ({best})", flush=True)
    tr.close()


if __name__ == "__main__":
    main()
