"""Run under mpiexec on a GPU machine: every algorithm (and native) x device dtype x op x count
on one device transport. Rank 0 prints one JSON line: the checks, the failures (wrong elements
summed over ranks), or {"skipped": reason} when the transport cannot run here."""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

import kernels.algorithms  # noqa: F401
from bench import data
from kernels.algorithm import ALGORITHMS, Problem
from kernels.ops import HOST_DTYPE, ITEMSIZE, OPS
from kernels.topology import Topology
from kernels.transports import TRANSPORTS, TransportUnavailable
from kernels.transports.gpu_plan import DEVICE_DTYPES


def main() -> None:
    name = sys.argv[1]
    comm = MPI.COMM_WORLD
    p = comm.size
    topo = Topology.blocks(p, 2) if p % 2 == 0 and p > 2 else Topology.flat(p)
    try:
        tr = TRANSPORTS.get(name).create(comm)
    except TransportUnavailable as e:
        if comm.rank == 0:
            print(json.dumps({"skipped": str(e)}))
        return
    failures, checks = [], 0
    for count in sorted({1, p + 1, 100_003}):
        for dtype in DEVICE_DTYPES:
            buf, scratch = tr.allocate(count, dtype), tr.allocate(count, dtype)
            for op_name, op in OPS.items():
                host = data.fill(comm.rank, p, count, op_name).astype(HOST_DTYPE[dtype])
                for alg_name in ALGORITHMS.names():
                    alg = ALGORITHMS.get(alg_name)
                    if alg.is_vendor:
                        plan = tr.vendor(buf, op)
                    else:
                        sched = alg.schedule(Problem(topo, count, ITEMSIZE[dtype]), comm.rank)
                        plan = tr.compile(sched, buf, scratch, op)
                    tr.upload(buf, host)
                    tr.barrier()
                    plan.run()
                    tr.synchronize()
                    wrong = data.count_wrong(tr.download(buf), p, op_name, dtype)
                    plan.close()
                    total = comm.allreduce(wrong, op=MPI.SUM)
                    checks += 1
                    if total:
                        failures.append([alg_name, dtype, op_name, count, total])
    tr.close()
    if comm.rank == 0:
        print(json.dumps({"world": p, "checks": checks, "failures": failures}))


if __name__ == "__main__":
    main()
