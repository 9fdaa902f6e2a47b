"""Benchmark: the schedule executor against hand-written rings, and every algorithm against the
vendor collective, per collective.

Run under mpiexec (the ratios are within one run, algorithms alternating, so noise cancels):

    .venv/bin/mpiexec -n 2 .venv/bin/python -m benchmarks.executor
    .venv/bin/mpiexec -n 2 .venv/bin/python -m benchmarks.executor --collective all_gather
    .venv/bin/mpiexec -n 4 .venv/bin/python -m benchmarks.executor --sizes 64KiB,1MiB,16MiB

Prints, per size, the median time (max over ranks per iteration) of the executor's ring, the
hand-written ring (all_reduce, all_gather, reduce_scatter; target executor/hand <= 1.05 at
>= 64 KiB) and the vendor call (``native``, out of place), the best algorithm and its busbw over
native's (target >= 1.0 at >= 1 MiB for all_gather, reduce_scatter and broadcast).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

from bench.argtypes import OneLineParser, positive_float, positive_int
from bench.measure import data
from bench.measure.case import Timing
from bench.measure.harness import Env, time_plans
from bench.measure.ranks import worst_over_ranks
from bench.units import format_size, parse_size
from benchmarks import results
from benchmarks.handring import HandRing, HandRingAllGather, HandRingReduceScatter
from kernels.algorithm import Problem, algorithms_of
from kernels.collective import resolve
from kernels.ops import OPS
from kernels.topology import Topology
from kernels.transports.base import Plan
from kernels.transports.mpi import MpiTransport

# Hand-written yardsticks for the executor's ring, by collective: (comm, buf, scratch) -> plan.
HAND: dict[str, Callable[[Any, np.ndarray, np.ndarray], Plan]] = {
    "all_reduce": lambda comm, buf, scratch: HandRing(comm, buf, scratch),
    "all_gather": lambda comm, buf, scratch: HandRingAllGather(comm, buf),
    "reduce_scatter": lambda comm, buf, scratch: HandRingReduceScatter(comm, buf, scratch),
}


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collective", default="all_reduce")
    ap.add_argument("--sizes", default="1KiB,4KiB,64KiB,256KiB,1MiB,4MiB,16MiB")
    ap.add_argument("--budget-ms", type=positive_float, default=400.0)
    ap.add_argument("--repetitions", type=positive_int, default=8)
    args = ap.parse_args()
    spec = resolve(args.collective)
    comm = MPI.COMM_WORLD
    p = comm.size
    tr = MpiTransport(comm)
    topo = Topology.flat(p)
    env = Env(comm, tr, topo, {})
    timing = Timing(warmup=5, time_budget_ms=args.budget_ms, min_iters=40, max_iters=20000,
                    repetitions=args.repetitions)
    algs = algorithms_of(spec.name)
    if comm.rank == 0:
        print(f"# {spec.name} p={p} float32 {'sum' if spec.reduces else ''}; median us (max over "
              f"ranks per iteration), {args.repetitions} alternating blocks; native out of place")
        print(f"{'size':>8} {'executor ring':>14} {'hand ring':>10} {'native':>10} "
              f"{'exec/hand':>10} {'best':>18} {'best busbw/native':>18}")
    for size in (parse_size(s) for s in args.sizes.split(",")):
        n = spec.round_count(size // 4, p)
        problem = Problem(topo, n, 4, spec.name)
        vendor_layout = spec.layout(n, p, comm.rank, separate=spec.vendor_separate)
        space = max(problem.space, vendor_layout.space)
        buf, scratch = tr.allocate(space, "float32"), tr.allocate(space, "float32")
        op = "sum" if spec.reduces else "none"
        inp = problem.layout(comm.rank).inp
        if inp is not None:
            tr.upload(buf[inp.start:inp.stop],
                      data.fill(comm.rank, p, inp.size, op).astype("float32"))
        plans: dict[str, Plan] = {}
        for a in algs:
            if a.is_vendor:
                plans[a.name] = tr.vendor(spec, buf, vendor_layout, OPS["sum"] if spec.reduces
                                          else None, 0)
            else:
                plans[a.name] = tr.compile(a.schedule(problem, comm.rank), buf, scratch, OPS["sum"])
        if spec.name in HAND and "ring" in plans:
            plans["hand"] = HAND[spec.name](tr.comm, buf[:n], scratch[:n])
        samples = time_plans(env, timing, list(plans.values()))
        med = {}
        for name, s in zip(plans, samples):
            worst = worst_over_ranks(comm, s)
            if worst is not None:
                med[name] = float(np.median(worst))
        for plan in plans.values():
            plan.close()
        if comm.rank == 0:
            own = [a.name for a in algs if not a.is_vendor]
            best = min(own, key=med.__getitem__) if own else "native"
            ring, hand = med.get("ring", float("nan")), med.get("hand", float("nan"))
            print(f"{format_size(n * 4):>8} {ring:>14.1f} {hand:>10.1f} {med['native']:>10.1f} "
                  f"{ring / hand:>10.3f} {best:>18} {med['native'] / med[best]:>18.3f}", flush=True)
    tr.close()


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
