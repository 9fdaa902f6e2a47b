"""Groups of communicators at once, inside one MPI job: each group measured by the collective
harness *alone* and *together* with the other groups' background load (docs/concurrency.md,
"Groups: alone and together"). A rank in several communicators runs each background one on a
thread of its own (``MPI_THREAD_MULTIPLE``); the background stops by agreement (a non-blocking
barrier, checked with a one-flag allreduce), so all its ranks stop after the same collective."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from mpi4py import MPI

from bench.concurrent.define import communicators, group_key
from bench.concurrent.scenario import ConcurrentScenario, GroupSpec
from bench.measure import harness
from bench.measure.case import Group
from bench.measure.recording import topology_for
from kernels.collective import resolve
from kernels.ops import ITEMSIZE
from kernels.topology import Topology
from kernels.transports import TRANSPORTS

Emit = Callable[..., None]  # the records of one step, written at once
THREADS = "a thread per communicator on ranks in several (MPI_THREAD_MULTIPLE)"
SEPARATE = "each communicator on ranks of its own (no rank in two)"
BACKGROUND = "the other groups run their collective back to back until the measured one is done"
POLL_S = 0.002  # how often a waiting rank looks whether its peers are done (it sleeps between)


def mpi_group(collective: str, algorithm: str, topo: Topology, nbytes: int,
              dtype: str) -> Group | None:
    """``algorithm`` of ``collective`` on the MPI transport over ``topo``'s ranks, ``nbytes``
    rounded down to whole elements (None when that leaves none)."""
    spec = resolve(collective)
    count = spec.round_count(nbytes // ITEMSIZE[dtype], topo.world)
    if count < 1:
        return None
    return Group(spec.name, "mpi", topo.world, topo.ranks_per_node, count * ITEMSIZE[dtype], count,
                 dtype, "sum", (algorithm,))


@dataclass
class Member:
    """This rank's communicator of one group (None where the rank is in none of its)."""

    spec: GroupSpec
    ranks: list[int]  # world ranks of the communicator, in its rank order
    stop: MPI.Comm  # a duplicate for the background's one-flag agreement
    env: harness.Env  # on the communicator and its topology

    def close(self) -> None:
        self.env.transport.close()
        self.stop.Free()
        self.env.control.Free()


@contextlib.contextmanager
def members(world: MPI.Comm, sc: ConcurrentScenario, topo: Topology
            ) -> Iterator[dict[str, Member]]:
    """This rank's communicator of each group it is in, by group name."""
    out: dict[str, Member] = {}
    try:
        for spec in sc.groups:
            comms = communicators(spec.members, topo)
            color = next((i for i, c in enumerate(comms) if world.rank in c), MPI.UNDEFINED)
            key = comms[color].index(world.rank) if color != MPI.UNDEFINED else world.rank
            sub = world.Split(color, key)
            if sub == MPI.COMM_NULL:
                continue
            ranks = comms[color]
            sub_topo = Topology.from_hosts([str(topo.node_of[r]) for r in ranks])
            env = harness.Env(sub, TRANSPORTS.get("mpi").create(sub), sub_topo, {})
            out[spec.name] = Member(spec, ranks, sub.Dup(), env)
        yield out
    finally:
        for m in out.values():
            m.close()


class Done:
    """This step's end: every rank posts a non-blocking barrier once its measured part is done;
    any thread of the rank may look whether all have (under a lock: one MPI request)."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm, self.lock, self.req, self.flag = comm, threading.Lock(), None, False

    def post(self) -> None:
        with self.lock:
            self.req = self.comm.Ibarrier()

    def seen(self) -> bool:
        with self.lock:
            if not self.flag and self.req is not None and self.req.Test():
                self.flag = True
            return self.flag

    def wait(self) -> None:
        while not self.seen():
            time.sleep(POLL_S)


def _background(m: Member, g: Group, done: Done) -> None:
    """``m``'s collective back to back, untimed, until some rank of it has seen ``done``."""
    with harness.compiled(m.env, g) as b:
        plan = b.entries[0].plan
        assert plan is not None
        while True:
            plan.run()
            if m.stop.allreduce(done.seen(), op=MPI.LOR):
                return


def step(ctl: MPI.Comm, mine: dict[str, Member], victim: str, together: bool,
         nbytes: int, sc: ConcurrentScenario) -> list[dict[str, Any]]:
    """One measurement of group ``victim`` (alone, or ``together`` with the others); its records
    on this rank when it is a measuring communicator's rank 0."""
    done = Done(ctl)
    load = [m for name, m in mine.items() if together and name != victim]
    groups = {name: mpi_group(m.spec.collective, m.spec.algorithm, m.env.topology, nbytes,
                               sc.dtype)
              for name, m in mine.items()}
    load = [m for m in load if groups[m.spec.name] is not None]
    errors: list[BaseException] = []

    def guarded(m: Member) -> None:
        try:
            _background(m, groups[m.spec.name], done)  # type: ignore[arg-type]
        except BaseException as e:  # said on the main thread, which ends the job
            errors.append(e)

    measured = mine.get(victim)
    on_main = None if measured is not None else (load.pop(0) if load else None)
    threads = [threading.Thread(target=guarded, args=(m,), daemon=True) for m in load]
    for t in threads:
        t.start()
    recs: list[dict[str, Any]] = []
    g = groups.get(victim)
    if measured is not None and g is not None:
        recs = harness.measure(measured.env, g, sc.timing, sc.check)
        recs = [{**r, "members": measured.ranks} for r in recs]
        done.post()
    else:
        done.post()
        if on_main is not None:
            guarded(on_main)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    done.wait()
    return recs


def run_groups(world: MPI.Comm, sc: ConcurrentScenario, emit: Emit | None,
               extra: dict[str, Any], arm: Callable[[str], None],
               disarm: Callable[[], None], done: Collection[tuple[Any, ...]] = ()) -> None:
    """Every group alone and together at every size, less the steps in ``done`` (a resumed
    run's, :func:`bench.concurrent.define.group_key`); ``emit`` (world rank 0) gets each record."""
    topo = topology_for(world, sc.ranks_per_node, equal_nodes=False)
    ctl = world.Dup()
    try:
        with members(world, sc, topo) as mine:
            several = world.allreduce(len(mine) > 1, op=MPI.LOR)
            names = [g.name for g in sc.groups]
            for nbytes in sc.sizes:
                for victim, rnd in ((v, i) for v in names for i in range(sc.rounds)):
                    for together in (False, True) if rnd % 2 == 0 else (True, False):
                        mode = "together" if together else "alone"
                        if group_key(victim, mode, rnd, nbytes) in done:
                            continue
                        arm(f"group {victim} {mode} at {nbytes} B")
                        recs = step(ctl, mine, victim, together, nbytes, sc)
                        disarm()
                        gathered = ctl.gather(recs, root=0)
                        if emit is None or gathered is None:
                            continue
                        others = [n for n in names if n != victim] if together else []
                        emit(*({**r, **extra, "kind": "concurrent", "group": victim,  # at once:
                                "mode": mode, "round": rnd, "together_with": others,  # a step is
                                "requested_nbytes": nbytes,  # resumed whole
                                "concurrency": THREADS if several else SEPARATE,
                                "background": BACKGROUND if together else None}
                               for part in gathered for r in part))
    finally:
        ctl.Free()
