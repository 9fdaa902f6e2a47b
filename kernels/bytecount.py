"""Exact bytes on the wire: per rank, split by link class (intra-node / inter-node)."""

from __future__ import annotations

from dataclasses import dataclass

from kernels.schedule import Schedule
from kernels.topology import Topology


@dataclass(frozen=True, slots=True)
class Bytes:
    total: int
    inter: int  # to ranks on other nodes

    @property
    def intra(self) -> int:
        return self.total - self.inter


def bytes_sent(schedule: Schedule, topology: Topology, itemsize: int) -> Bytes:
    """Bytes this rank's schedule sends, total and across nodes."""
    total = inter = 0
    for st in schedule.steps:
        for s in st.sends:
            n = s.range.size * itemsize
            total += n
            if not topology.same_node(schedule.rank, s.peer):
                inter += n
    return Bytes(total, inter)
