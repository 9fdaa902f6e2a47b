"""Run under mpiexec: every algorithm (and native) x dtype x op x count on one transport
(``exact.py TRANSPORT [RANKS_PER_NODE]``; every dtype the transport declares). Rank 0 prints one
JSON line: the number of checks and the failures (wrong elements summed over ranks), or
``{"skipped": reason}`` when the transport cannot run here (a device transport without a GPU)."""

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

LARGE_PRIME = 100_003


def main() -> None:
    transport_name = sys.argv[1] if len(sys.argv) > 1 else "mpi"
    rpn = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    comm = MPI.COMM_WORLD
    p = comm.size
    topo = Topology.blocks(p, rpn) if rpn else Topology.flat(p)
    spec = TRANSPORTS.get(transport_name)
    try:
        tr = spec.create(comm)
    except TransportUnavailable as e:
        if comm.rank == 0:
            print(json.dumps({"skipped": str(e)}))
        return
    failures, checks = [], 0
    for count in sorted({1, max(1, p - 1), p + 1, LARGE_PRIME}):
        for dtype in spec.dtypes:
            buf, scratch = tr.allocate(count, dtype), tr.allocate(count, dtype)
            for op_name, op in OPS.items():
                host = data.fill(comm.rank, p, count, op_name).astype(HOST_DTYPE[dtype])
                for name in ALGORITHMS.names():
                    alg = ALGORITHMS.get(name)
                    if alg.is_vendor:
                        plan = tr.vendor(buf, op)
                    else:
                        sched = alg.schedule(Problem(topo, count, ITEMSIZE[dtype]), comm.rank)
                        plan = tr.compile(sched, buf, scratch, op)
                    tr.upload(buf, host)
                    tr.barrier()  # device transports: every rank's input is in place first
                    plan.run()
                    tr.synchronize()
                    wrong = data.count_wrong(tr.download(buf), p, op_name, dtype)
                    plan.close()
                    total = comm.allreduce(wrong, op=MPI.SUM)
                    checks += 1
                    if total:
                        failures.append([name, dtype, op_name, count, total])
    tr.close()
    if comm.rank == 0:
        print(json.dumps({"world": p, "checks": checks, "failures": failures}))


if __name__ == "__main__":
    main()
