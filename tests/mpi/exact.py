"""Run under mpiexec: every collective x algorithm (native included) x dtype x op x awkward count
on one transport, through the harness's own preparation and check, no clock
(``exact.py TRANSPORT [RANKS_PER_NODE]``; every dtype the transport declares). Rank 0 prints one
JSON line: the checks made and the failures (wrong elements summed over ranks), or
``{"skipped": reason}`` when the transport cannot run here (a device transport without a GPU)."""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from bench.collective import harness
from bench.collective.case import Group, runnable
from kernels import collective as coll
from kernels.algorithm import algorithm_names
from kernels.ops import ITEMSIZE, OPS
from kernels.topology import Topology
from kernels.transports import TRANSPORTS, TransportUnavailable

LARGE_PRIME = 100_003


def counts(spec: coll.Collective, p: int) -> list[int]:
    """1, p-1, p+1, a small prime and a large prime elements (per rank block when divided)."""
    per = sorted({1, max(1, p - 1), p + 1, 7, LARGE_PRIME // max(1, p) | 1})
    return [c * p for c in per] if spec.divides else per


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
    env = harness.Env(comm, tr, topo, {})
    failures, checks, ran = [], 0, []
    for name in coll.names():
        c = coll.resolve(name)
        algs = runnable(c, transport_name, tuple(algorithm_names(name)), None)
        ran += [f"{name}/{a}" for a in algs]
        for count in counts(c, p):
            for dtype in spec.dtypes:
                for op in OPS if c.reduces else ["none"]:
                    g = Group(name, transport_name, p, rpn or p, count * ITEMSIZE[dtype], count,
                              dtype, op, algs, p - 1 if c.rooted else 0)
                    for alg, wrong in harness.check_group(env, g).items():
                        checks += 1
                        if wrong:
                            failures.append([name, alg, dtype, op, count, wrong])
    tr.close()
    if comm.rank == 0:
        print(json.dumps({"world": p, "checks": checks, "failures": failures, "algorithms": ran}))


if __name__ == "__main__":
    main()
