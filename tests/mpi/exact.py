"""Run under mpiexec: every collective x algorithm (native included) x dtype x op x awkward count
on one transport (above 4 ranks, a sample of dtype x op: :func:`combos`), through the harness's
own preparation and check, no clock (``exact.py TRANSPORT [RANKS_PER_NODE [COLLECTIVES [DTYPES]]]``,
COLLECTIVES: ``;``-separated names, bound ones included, e.g. ``alltoallv(zipf,s=1.5)``; DTYPES:
``,``-separated, a subset of the transport's). Rank 0 prints one
JSON line: the checks made and the failures (wrong elements summed over ranks), or
``{"skipped": reason}`` when the transport cannot run here (a device transport without a GPU)."""

from __future__ import annotations

import json
import sys

from mpi4py import MPI

from bench.collective.case import runnable
from bench.measure import harness
from bench.measure.case import Group
from kernels import collective as coll
from kernels.algorithm import algorithm_names
from kernels.ops import ITEMSIZE, OPS
from kernels.topology import Topology
from kernels.transports import TRANSPORTS, TransportUnavailable

LARGE_PRIME = 100_003
FULL_UP_TO = 4  # every dtype x op up to 4 ranks; above, the world size only reshapes the schedule
# Above FULL_UP_TO: the 2-byte float (rounding), a float's max, and the 8-byte integer's product.
WIDE = (("float16", "sum"), ("float32", "max"), ("int64", "prod"))


def counts(spec: coll.Collective, p: int) -> list[int]:
    """1, p-1, p+1, a small prime and a large prime elements (per rank block when divided)."""
    per = sorted({1, max(1, p - 1), p + 1, 7, LARGE_PRIME // max(1, p) | 1})
    return [c * p for c in per] if spec.divides else per


def combos(spec: coll.Collective, dtypes: tuple[str, ...], p: int) -> list[tuple[str, str]]:
    """The (dtype, op) pairs checked at ``p`` ranks: all of them up to :data:`FULL_UP_TO` ranks
    (op ``none`` for a collective that does not reduce); above, those of :data:`WIDE` the
    transport has: how an op treats a dtype does not depend on the world size, the schedule does."""
    every = [(d, o) for d in dtypes for o in (OPS if spec.reduces else ["none"])]
    if p <= FULL_UP_TO:
        return every
    wide = [(d, o if spec.reduces else "none") for d, o in WIDE if d in dtypes]
    return wide or every[:1]


def main() -> None:
    transport_name = sys.argv[1] if len(sys.argv) > 1 else "mpi"
    rpn = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    chosen = sys.argv[3].split(";") if len(sys.argv) > 3 else coll.names()
    comm = MPI.COMM_WORLD
    p = comm.size
    topo = Topology.blocks(p, rpn) if rpn else Topology.flat(p)
    spec = TRANSPORTS.get(transport_name)
    dtypes = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else spec.dtypes
    try:
        tr = spec.create(comm)
    except TransportUnavailable as e:
        if comm.rank == 0:
            print(json.dumps({"skipped": str(e)}))
        return
    env = harness.Env(comm, tr, topo, {})
    failures, checks, ran = [], 0, []
    for name in chosen:
        c = coll.resolve(name)
        algs = runnable(c, transport_name, tuple(algorithm_names(c.name)), None)
        ran += [f"{name}/{a}" for a in algs]
        for count in counts(c, p):
            for dtype, op in combos(c, dtypes, p):
                g = Group(c.key, transport_name, p, rpn or p, count * ITEMSIZE[dtype], count,
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
