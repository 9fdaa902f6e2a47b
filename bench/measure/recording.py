"""What every kind's MPI job shares around its measurements: the job's nodes (``topology_for``),
whether its ranks oversubscribe this host, and ``recording``: the watchdog on every rank and the
record writer on rank 0, the in-flight marker cleared at a clean end only."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

from mpi4py import MPI

from bench.launch import inflight
from bench.launch.forensics import Hang
from bench.launch.launcher import WORKER_ENV, oversubscribed
from bench.launch.rankstate import Slots
from bench.launch.signals import end_meta
from bench.launch.threadlevel import may_abort_from_thread
from bench.launch.watchdog import Watchdog
from bench.store.kinds import now
from bench.store.records import ResultWriter
from kernels.topology import Topology


def topology_for(comm: MPI.Comm, rpn: int | str, equal_nodes: bool = True) -> Topology:
    """Nodes of ``rpn`` consecutive ranks, or by host name (``auto``: with ``equal_nodes``,
    ValueError unless every node holds as many ranks)."""
    if rpn != "auto":
        return Topology.blocks(comm.size, int(rpn))
    topo = Topology.from_hosts(comm.allgather(socket.gethostname()))
    if equal_nodes:
        topo.ranks_per_node  # noqa: B018 - raises when nodes hold different numbers of ranks
    return topo


def oversubscribed_comm(comm: MPI.Comm) -> bool:
    """Whether ``comm``'s ranks on this host outnumber its cores (the collective kind and the
    probe record it)."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return oversubscribed(local.size)
    finally:
        local.Free()


@contextlib.contextmanager
def recording(comm: MPI.Comm, run_dir: Path) -> Iterator[tuple[Watchdog, ResultWriter | None]]:
    """A job's watchdog on every rank and its record writer on rank 0; the in-flight marker is
    cleared at a clean end only (a case that raised, a peer dead, stays named for the launcher)."""
    # MPI_Abort from the watchdog's thread only where MPI allows it (thread level multiple);
    # else the rank ends itself and the launcher tears the job down
    slots = Slots(run_dir, comm.rank, comm.bcast(uuid.uuid4().hex if comm.rank == 0 else None))
    users_job = not os.environ.get(WORKER_ENV)  # else the self-launcher owns meta.json
    dog = Watchdog(comm.rank, comm.Abort if may_abort_from_thread() else os._exit, slots=slots,
                   world_size=comm.size,
                   on_hang=functools.partial(hang_in_meta, run_dir) if users_job else None,
                   marker=run_dir if comm.rank == 0 else None)
    writer = ResultWriter(run_dir) if comm.rank == 0 else None
    try:
        yield dog, writer
    finally:
        dog.close()
        if writer:
            writer.close()
    slots.remove()
    if writer:
        inflight.clear(run_dir)


def hang_in_meta(run_dir: Path, hang: Hang) -> None:
    """The user's own job: the run failed with ``hang`` (its launcher tears it down next)."""
    end_meta(run_dir, {"status": "failed", "reason": hang.line, "failed_case": hang.case,
                       "hang": hang.as_dict(), "finished": now()})
