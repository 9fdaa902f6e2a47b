"""The topology model: ranks on nodes, nodes under leaf switches, leaves under spines, from a spec
string (``64x8``, ``8,8,4``, ``64x8:leaf=16:oversub=2``, ``64x8:nics=8:cyclic``, ``36x4:domain=18``;
docs/predict.md, "Topology and profiles"). ``domain=T``: an NVLink domain spans T trays (the
spec's nodes; GB200 NVL72: 18 trays of 4), so the model's node, inside which messages take
NVLink, is the domain, its NICs all its trays' (what NCCL's multi-node NVLink does too).
A world size of p ranks takes the cluster's first p ranks
(:meth:`Cluster.place`); more ranks than the cluster has add nodes like its largest one, under
leaves of the same size (:attr:`Placed.scaled_out` says so)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from bench.argtypes import CommbenchError
from kernels.closed import CLASS_NAMES, INTER, INTRA, SPINE
from kernels.topology import Topology

PLACEMENTS = ("block", "cyclic")
OPTIONS = {"leaf": ("nodes_per_leaf", int), "oversub": ("oversubscription", float),
           "nics": ("nics_per_node", int), "domain": ("trays_per_domain", int)}
# spec option -> Cluster field, its type
__all__ = ["CLASS_NAMES", "INTER", "INTRA", "SPINE", "Cluster", "Placed", "TopologyError",
           "parse_topology"]


class TopologyError(CommbenchError, ValueError):
    """A spec that does not describe a cluster; one line naming the spec."""


@dataclass(frozen=True)
class Cluster:
    node_sizes: tuple[int, ...]  # ranks per node, in node order
    placement: str = "block"
    nodes_per_leaf: int | None = None  # None: a single switch joins every node (no spine level)
    oversubscription: float = 1.0
    nics_per_node: int | None = None  # None: the profile's; per tray with trays_per_domain
    trays_per_domain: int = 1  # an NVLink domain over several of the spec's nodes (trays)
    spec: str = ""

    def __post_init__(self) -> None:
        where = f"topology {self.spec or self.node_sizes!r}"
        if not self.node_sizes or any(n < 1 for n in self.node_sizes):
            raise TopologyError(f"{where}: every node needs at least one rank")
        if self.placement not in PLACEMENTS:
            raise TopologyError(f"{where}: placement must be block or cyclic, got {self.placement!r}")
        if self.nodes_per_leaf is not None and self.nodes_per_leaf < 1:
            raise TopologyError(f"{where}: leaf must be >= 1 node")
        if not (math.isfinite(self.oversubscription) and self.oversubscription >= 1):
            raise TopologyError(f"{where}: oversub must be a number >= 1")
        if self.nics_per_node is not None and self.nics_per_node < 1:
            raise TopologyError(f"{where}: nics must be >= 1")
        t = self.trays_per_domain
        if t < 1:
            raise TopologyError(f"{where}: domain must be >= 1 tray")
        if t > 1 and (len(self.node_sizes) % t or len(set(self.node_sizes)) > 1):
            raise TopologyError(f"{where}: domain={t} needs equal trays, a whole number of "
                                f"domains ({len(self.node_sizes)} trays)")

    @property
    def world(self) -> int:
        return sum(self.node_sizes)

    @property
    def num_nodes(self) -> int:
        return len(self.node_sizes)

    def place(self, world: int) -> Placed:
        """The first ``world`` ranks (adding nodes like its largest when it holds fewer), placed;
        with NVLink domains over trays, each domain is one node of the model. Cached: a
        placement of a million ranks is built once per cluster and world size."""
        return _place(self, world)

    def _place(self, world: int) -> Placed:
        if world < 1:
            raise TopologyError(f"world size must be >= 1, got {world}")
        t = self.trays_per_domain
        sizes = [sum(self.node_sizes[i:i + t]) for i in range(0, len(self.node_sizes), t)]
        big = max(sizes)
        sizes += [big] * max(0, -(-(world - sum(sizes)) // big))  # nodes like its largest
        node_of_phys = _assign(sizes, self.placement)[:world]
        used = list(dict.fromkeys(node_of_phys))  # physical nodes by first rank
        renum = {n: i for i, n in enumerate(used)}
        leaf = self.nodes_per_leaf or len(sizes)
        leaf_of = tuple(n // leaf for n in used)
        leaves = sorted(set(leaf_of))
        leaf_ids = {x: i for i, x in enumerate(leaves)}
        leaf_nodes = tuple(min(leaf, len(sizes) - x * leaf) for x in leaves)
        nics = None if self.nics_per_node is None else self.nics_per_node * t
        return Placed(tuple(renum[n] for n in node_of_phys), tuple(leaf_ids[x] for x in leaf_of),
                      leaf_nodes, self.oversubscription, nics, world > self.world, self)


@lru_cache(maxsize=16)
def _place(cluster: Cluster, world: int) -> Placed:
    return cluster._place(world)


def _assign(sizes: list[int], placement: str) -> list[int]:
    """Physical node of each rank: node by node (block) or one rank per node in turn (cyclic)."""
    if placement == "block":
        return [n for n, s in enumerate(sizes) for _ in range(s)]
    out: list[int] = []
    for t in range(max(sizes)):
        out.extend(n for n, s in enumerate(sizes) if s > t)
    return out


@dataclass(frozen=True)
class Placed:
    """One job on a cluster: ``node_of[r]`` (nodes numbered by first rank), ``leaf_of[n]`` per
    node, ``leaf_nodes[x]`` physical nodes under leaf x (its uplink capacity counts them)."""

    node_of: tuple[int, ...]
    leaf_of: tuple[int, ...]
    leaf_nodes: tuple[int, ...]
    oversubscription: float
    nics_per_node: int | None
    scaled_out: bool
    cluster: Cluster

    @property
    def world(self) -> int:
        return len(self.node_of)

    @cached_property
    def topology(self) -> Topology:
        return Topology(self.node_of)

    @cached_property
    def node_sizes(self) -> tuple[int, ...]:
        counts = Counter(self.node_of)
        return tuple(counts[n] for n in range(max(self.node_of) + 1))

    @property
    def num_nodes(self) -> int:
        return len(self.node_sizes)

    @property
    def num_leaves(self) -> int:
        return len(self.leaf_nodes)

    @cached_property
    def equal_nodes(self) -> bool:
        return len(set(self.node_sizes)) == 1

    @cached_property
    def order(self) -> tuple[int, ...]:
        """Ranks node by node, in rank order within a node (``kernels.phases.node_order``)."""
        return tuple(sorted(range(self.world), key=self.node_of.__getitem__))  # a stable sort

    @cached_property
    def node_array(self) -> np.ndarray:
        """``node_of`` as an int64 array (built once: the cost model reads it per job)."""
        return np.asarray(self.node_of, dtype=np.int64)

    @cached_property
    def contiguous(self) -> bool:
        """Ranks numbered node by node (what block placement gives): rank order is node order."""
        if self.cluster.placement == "block":  # nodes numbered by first rank: never decreasing
            return True
        return bool((np.diff(self.node_array) >= 0).all())

    @cached_property
    def uniform_leaves(self) -> bool:
        """Every leaf holds the same number of this job's nodes and of physical nodes."""
        per = [0] * self.num_leaves
        for x in self.leaf_of:
            per[x] += 1
        return len(set(per)) == 1 and len(set(self.leaf_nodes)) == 1 and per[0] == self.leaf_nodes[0]

    def classes_used(self) -> list[str]:
        """The link classes a message of this job may cross."""
        per_leaf = [self.leaf_of.count(x) for x in range(self.num_leaves)]
        used = [max(self.node_sizes) > 1, max(per_leaf) > 1, self.num_leaves > 1]
        return [c for c, u in zip(CLASS_NAMES, used) if u]

    def describe(self) -> str:
        sizes = self.node_sizes
        shape = f"{len(sizes)}x{sizes[0]}" if self.equal_nodes else ",".join(map(str, sizes))
        leaves = f", {self.num_leaves} leaves" if self.num_leaves > 1 else ""
        t = self.cluster.trays_per_domain
        trays = f", NVLink domains of {t} trays" if t > 1 else ""
        return f"{shape} ({self.cluster.placement}{leaves}{trays})"


def parse_topology(spec: str) -> Cluster:
    """A :class:`Cluster` from a spec string (module docstring); TopologyError names the spec."""
    text = spec.strip()
    head, *opts = text.split(":")
    where = f"topology {spec!r}"
    kw: dict[str, object] = {"spec": text}
    try:
        if "x" in head.lower():
            n, l = head.lower().split("x")  # noqa: E741 - ranks per node
            sizes = (int(l),) * int(n)
            if int(n) < 1:
                raise TopologyError(f"{where}: needs at least one node")
        else:
            sizes = tuple(int(x) for x in head.split(","))
    except ValueError:
        raise TopologyError(f"{where}: expected NODESxRANKS (64x8) or ranks per node (8,8,4)") \
            from None
    for opt in opts:
        key, _, val = opt.partition("=")
        key = key.strip().lower()
        try:
            if key in PLACEMENTS and not val:
                kw["placement"] = key
            elif key in OPTIONS:
                field, kind = OPTIONS[key]
                kw[field] = kind(val)
            else:
                raise TopologyError(f"{where}: unknown option {opt!r} (leaf=, oversub=, nics=, "
                                    "domain=, block, cyclic)")
        except ValueError as e:
            if isinstance(e, TopologyError):
                raise
            raise TopologyError(f"{where}: {key}={val!r} is not a number") from None
    return Cluster(sizes, **kw)  # type: ignore[arg-type]
