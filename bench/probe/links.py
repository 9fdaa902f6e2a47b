"""Which node each rank is on and which link class (``intra``, ``inter``, ``spine``: the cost
model's) joins two ranks, as the probe sees its job: nodes by host name, virtual nodes of
``ranks_per_node`` ranks, or an emulated topology."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernels.topology import Topology


@dataclass(frozen=True)
class Layout(Topology):
    """A :class:`Topology` with each rank's host name, the leaf switch of each node (None: one
    switch) and how the nodes were decided (for the report)."""

    hosts: tuple[str, ...]
    leaf_of: tuple[int, ...] | None = None
    source: str = "host names"

    def __post_init__(self) -> None:
        super().__post_init__()  # raises unless nodes are numbered 0..n-1
        if len(self.hosts) != len(self.node_of):
            raise ValueError(f"{len(self.hosts)} host names for {len(self.node_of)} ranks")
        if self.leaf_of is not None and len(self.leaf_of) != self.num_nodes:
            raise ValueError(f"{len(self.leaf_of)} leaves given for {self.num_nodes} nodes")

    def link_class(self, a: int, b: int) -> str:
        na, nb = self.node_of[a], self.node_of[b]
        if na == nb:
            return "intra"
        if self.leaf_of is None or self.leaf_of[na] == self.leaf_of[nb]:
            return "inter"
        return "spine"

    def node_host(self, node: int) -> str:
        return self.hosts[self.nodes()[node][0]]

    def node_name(self, node: int) -> str:
        """``node 3 (host vm1, ranks 6-7)``: how a report names a node, by host and ranks."""
        ranks = self.nodes()[node]
        span = (f"rank {ranks[0]}" if len(ranks) == 1 else
                f"ranks {ranks[0]}-{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1))
                else "ranks " + ",".join(map(str, ranks)))
        return f"node {node} (host {self.node_host(node)}, {span})"


def from_launch(hosts: Sequence[str], ranks_per_node: int | str) -> Layout:
    """Nodes by host name (``auto``), or virtual nodes of ``ranks_per_node`` consecutive ranks."""
    if ranks_per_node == "auto":
        return Layout(Topology.from_hosts(hosts).node_of, tuple(hosts))
    rpn = int(ranks_per_node)
    topo = Topology.blocks(len(hosts), rpn)  # ValueError when it does not divide the world
    return Layout(topo.node_of, tuple(hosts), None,
                  f"virtual nodes of {rpn} consecutive ranks (ranks_per_node {rpn})")


def from_placed(hosts: Sequence[str], node_of: Sequence[int], leaf_of: Sequence[int],
                spec: str) -> Layout:
    """Nodes and leaves of an emulated topology (``bench.costmodel.model.Placed``)."""
    leaves = tuple(leaf_of) if len(set(leaf_of)) > 1 else None
    return Layout(tuple(node_of), tuple(hosts), leaves, f"emulated topology {spec}")


def flows(layout: Layout, pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """For each pair of one round, how many of the round's pairs (they run at once) leave the
    busier of its two nodes; 1 for a pair within a node."""
    out_of: dict[int, int] = {}
    for a, b in pairs:
        if layout.node_of[a] != layout.node_of[b]:
            for n in (layout.node_of[a], layout.node_of[b]):
                out_of[n] = out_of.get(n, 0) + 1
    return {(a, b): 1 if layout.node_of[a] == layout.node_of[b]
            else max(out_of[layout.node_of[a]], out_of[layout.node_of[b]]) for a, b in pairs}
