"""What every vendor algorithm file declares, in the form of NCCL's own tuning model
(``src/graph/tuning.cc``): its collectives and protocols, when the fabric has it, its
large-message bus bandwidth (nccl-tests' busbw, protocol Simple) and its latency per protocol;
and the job it prices."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from bench.costmodel.fabric import Fabric
from bench.costmodel.model import Placed

US = 1e-6
PROTOCOLS = ("LL", "LL128", "Simple")


@dataclass(frozen=True)
class Job:
    """A placed job seen by the vendor model: p ranks, N nodes of at most l ranks, how many
    leaves it spans (crossing leaves divides the NIC bandwidth by the oversubscription)."""

    p: int
    l: int  # noqa: E741 - ranks on the busiest node
    nodes: int
    leaves: int
    oversubscription: float
    fabric: Fabric

    @classmethod
    def of(cls, placed: Placed, fabric: Fabric) -> Job:
        """The job on ``fabric``; a topology's ``nics=K`` overrides the fabric's NIC count."""
        if placed.nics_per_node is not None:
            fabric = replace(fabric, nics=placed.nics_per_node)
        busiest = placed.node_sizes[0] if placed.equal_nodes else max(placed.node_sizes)
        return cls(placed.world, busiest, placed.num_nodes, placed.num_leaves,
                   placed.oversubscription, fabric)

    @property
    def ring_intra(self) -> float:
        """Bytes/s per rank a ring sustains inside a node (its slowest link share)."""
        return self.fabric.ring_intra(self.l)

    @property
    def node_net(self) -> float:
        """Achievable bytes/s per direction out of (and into) one node over its NICs; a job
        across leaves gets its uplink share (1 / oversubscription)."""
        over = self.oversubscription if self.leaves > 1 else 1.0
        return self.fabric.node_net(self.l) / over

    @property
    def hw(self) -> str:
        """The hardware class of one intra-node hop: nvlink or pci."""
        return "nvlink" if self.fabric.switch == "nvswitch" else "pci"

    def hop(self, table: dict[str, dict[str, float]], hw: str, proto: str) -> float:
        """A hop latency (us) of NCCL's ``table`` on ``hw``, LL's on NVLink scaled by the
        fabric's factor."""
        scale = self.fabric.ll_nvlink_hop if hw == "nvlink" and proto == "LL" else 1.0
        return table[hw][proto] * scale

    def base(self, table: dict[str, float], proto: str) -> float:
        """A base latency (us) of NCCL's ``table``, LL's scaled by the fabric's factor."""
        return table[proto] * (self.fabric.ll_base if proto == "LL" else 1.0)

    @property
    def log2_nodes(self) -> int:
        return int(math.log2(self.nodes)) if self.nodes > 1 else 0


@dataclass(frozen=True)
class VendorAlgorithm:
    name: str
    collectives: tuple[str, ...]
    protocols: tuple[str, ...]
    applies: Callable[[Job, str], str | None]  # why it does not run here, or None
    busbw: Callable[[Job, str], float]  # bytes/s, nccl-tests bus bandwidth, Simple, large sizes
    latency: Callable[[Job, str, str], float]  # seconds per call, per protocol
    order: int = 0  # tie-break: lower first (NCCL's algorithm order)


def always(job: Job, collective: str) -> str | None:
    return None


def steps(collective: str, p: int) -> int:
    """Steps of a ring: 2(p-1) for all_reduce, p-1 for gathers and scatters, p for chains."""
    if collective == "all_reduce":
        return 2 * (p - 1)
    return p - 1 if collective in ("all_gather", "reduce_scatter") else p
