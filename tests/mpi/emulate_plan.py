"""Run under mpiexec -n 4 by tests/emulate/test_emulate.py: the MPI transport with emulated links on a
2x2 cluster, with a waiter that records instead of sleeping. Each rank runs ring and hierarchical
all_reduce once, checks the result element by element and checks the offsets it waited against
the hand-computed model; then the harness's own check runs through the emulated transport. Rank 0
prints one JSON line: the failures and every rank's waits."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from mpi4py import MPI

from bench.costmodel.profile import Link, Profile
from bench.emulate.links import link_delay
from bench.emulate.transport import EmulatedMpi
from bench.measure import harness
from bench.measure.case import Group
from kernels.algorithm import Problem, get_algorithm
from kernels.ops import OPS
from kernels.transports.mpi import MpiTransport

A_INTRA, B_INTRA, A_INTER, B_INTER = 1e-6, 1e9, 1e-3, 1e6
PROFILE = Profile("t", "", "test", {"intra": Link(A_INTRA, B_INTRA), "inter": Link(A_INTER, B_INTER)})
COUNT = 1024  # float32: ring moves 1024 B per step; hierarchical's inter steps 1024 B per message


@dataclass
class RecordingWaiter:
    """Waits for nothing; ``offsets`` lists every offset asked for, in order."""

    offsets: list[float] = field(default_factory=list)

    def mark(self) -> float:
        return 0.0

    def until(self, mark: float, offset_s: float) -> None:
        self.offsets.append(offset_s)

    def until_done(self, done: Callable[[], bool]) -> None:
        while not done():
            pass


def delay(nbytes: int, flows: int) -> float:
    return (A_INTER + nbytes * flows / B_INTER) - (A_INTRA + nbytes / B_INTRA)


def expected(alg: str, rank: int) -> list[tuple[float, list[int]]]:
    """(offset, peers) of each wait. Ring on 2x2: ranks 1 and 3 send across nodes in all 6
    steps, one flow per node. Hierarchical: every rank sends to its peer on the other node in
    the 2 inter steps, the node's two ranks sharing its one NIC."""
    if alg == "ring":
        return [(delay(1024, 1), [(rank + 1) % 4])] * 6 if rank in (1, 3) else []
    return [(delay(1024, 2), [(rank + 2) % 4])] * 2


def main() -> int:
    comm = MPI.COMM_WORLD
    links = link_delay(PROFILE, "2x2", comm.size)
    topo = links.placed.topology
    errors: list[str] = []
    waits = {}
    for alg in ("ring", "hierarchical"):
        waiter = RecordingWaiter()
        tr = EmulatedMpi(MpiTransport(comm), links, waiter)
        sched = get_algorithm("all_reduce", alg).schedule(Problem(topo, COUNT, 4), comm.rank)
        buf = np.full(COUNT, comm.rank + 1, dtype=np.float32)
        plan = tr.compile(sched, buf, np.zeros(COUNT, dtype=np.float32), OPS["sum"])
        plan.run()
        if not np.array_equal(buf, np.full(COUNT, 10, dtype=np.float32)):
            errors.append(f"{alg}: wrong sum on rank {comm.rank}")
        got = [(w.offset_s, list(w.peers)) for w in plan.waits]
        want = expected(alg, comm.rank)
        if len(got) != len(want) or any(abs(a - b) > 1e-15 or p != q
                                         for (a, p), (b, q) in zip(got, want)):
            errors.append(f"{alg}: rank {comm.rank} waits {got}, expected {want}")
        if waiter.offsets != [w.offset_s for w in plan.waits]:
            errors.append(f"{alg}: rank {comm.rank} waited {waiter.offsets}")
        waits[alg] = got
        plan.close()
        tr.close()
    tr = EmulatedMpi(MpiTransport(comm), links, RecordingWaiter())
    env = harness.Env(comm, tr, topo, {})
    wrong = harness.check_group(env, Group("all_reduce", "mpi", 4, 2, 4 * COUNT, COUNT, "float32",
                                           "sum", ("ring", "hierarchical", "halving_doubling")))
    tr.close()
    everyone = comm.gather({"errors": errors, "waits": waits}, root=0)
    if comm.rank == 0:
        assert everyone is not None
        print(json.dumps({"errors": [e for x in everyone for e in x["errors"]], "wrong": wrong,
                          "waits": [x["waits"] for x in everyone]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
