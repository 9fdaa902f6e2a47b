"""Topology: which ranks share a node, and the link classes between them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Topology:
    """``node_of[r]`` is the node index of rank ``r``; nodes are numbered 0..n-1.

    Ranks of one node may be anywhere in rank order (srun's cyclic placement, say); algorithms
    ask for :meth:`nodes` and :meth:`local_index` rather than assuming contiguous blocks.
    """

    node_of: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.node_of:
            raise ValueError("a topology needs at least one rank")
        ids = sorted(set(self.node_of))
        if ids != list(range(len(ids))):
            raise ValueError(f"node ids must be 0..n-1, got {ids}")

    @classmethod
    def flat(cls, world: int) -> Topology:
        return cls((0,) * world)

    @classmethod
    def blocks(cls, world: int, ranks_per_node: int) -> Topology:
        """Virtual nodes of ``ranks_per_node`` consecutive ranks."""
        if ranks_per_node < 1 or world % ranks_per_node:
            raise ValueError(f"ranks_per_node {ranks_per_node} does not divide world size {world}")
        return cls(tuple(r // ranks_per_node for r in range(world)))

    @classmethod
    def from_hosts(cls, hosts: Sequence[str]) -> Topology:
        """One node per distinct host name, numbered by first appearance."""
        index: dict[str, int] = {}
        return cls(tuple(index.setdefault(h, len(index)) for h in hosts))

    @property
    def world(self) -> int:
        return len(self.node_of)

    @property
    def num_nodes(self) -> int:
        return max(self.node_of) + 1

    def nodes(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for r, n in enumerate(self.node_of):
            out[n].append(r)
        return out

    @property
    def ranks_per_node(self) -> int:
        """Ranks on each node; raises if nodes differ in size."""
        sizes = {len(n) for n in self.nodes()}
        if len(sizes) != 1:
            raise ValueError(f"nodes hold different numbers of ranks: {sorted(sizes)}")
        return sizes.pop()

    def local_index(self, rank: int) -> int:
        return self.nodes()[self.node_of[rank]].index(rank)

    def same_node(self, a: int, b: int) -> bool:
        return self.node_of[a] == self.node_of[b]
