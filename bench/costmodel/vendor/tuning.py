"""NCCL's own choice of algorithm, protocol and channels per call, restated from its tuning model
(NVIDIA/nccl ``src/graph/tuning.cc`` ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``,
``src/enqueue.cc`` ``topoGetAlgoInfo``; docs/predict.md, "NCCL's own model"). It answers what
NCCL *picks*; how long that pick takes on the fabric is the vendor model's business
(:mod:`bench.costmodel.vendor.choose`), because NCCL's estimate is a ranking device, not a
prediction (it knows nothing of congestion, and its bandwidths are its topology search's).

Inputs are what NCCL's topology search hands the tuner (:class:`Comm`): nodes (NVLink domains
count as one node, as NCCL's multi-node NVLink does), ranks, per-algorithm graphs (channels,
per-channel intra- and inter-node GB/s), the GPU generation, the intra-node link, the CPU, and
whether NVLS and CollNet are supported. Not modelled: CollNet Chain (never enabled here), NCCL's
user overrides beyond ``disable``/``only``, tuner plugins, fp8's ring demotion."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from bench.costmodel.vendor import constants as K

FUNCTIONS = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")


@dataclass(frozen=True)
class Graph:
    """One algorithm's graph from NCCL's topology search: channels, GB/s per channel inside a
    node and between nodes, and the extra network latency (us) it reports."""

    channels: int
    bw_intra: float
    bw_inter: float
    latency_inter: float = 0.0
    same_channels: bool = False  # every channel the same ring: broadcast/reduce pay one hop


@dataclass(frozen=True)
class Comm:
    nodes: int
    ranks: int
    graphs: Mapping[str, Graph]  # by algorithm; PAT shares the tree's, NVLSTree the NVLS one
    generation: str = "hopper"
    intra: str = "nvlink"  # nvlink | pci: the graph's intra-node link type
    cpu: str = "intel"  # intel | amd | arm
    nvls: bool = False  # NVLS supported (NVSwitch with multicast)
    collnet: bool = False  # in-network reduction configured
    tree_pattern: str = "balanced"  # balanced | split | tree (the search's maxTreePattern)
    net_overhead: float | None = None  # us; None: by CPU (getNetOverhead)
    disable: frozenset[str] = field(default_factory=frozenset)

    @property
    def ppn(self) -> float:
        return self.ranks / self.nodes

    def graph(self, algo: str) -> Graph:
        key = {"PAT": "Tree", "NVLSTree": "NVLS", "CollNetChain": "CollNetDirect"}.get(algo, algo)
        return self.graphs.get(key) or self.graphs["Ring"]


@dataclass(frozen=True)
class Decision:
    algorithm: str
    protocol: str
    time_us: float  # NCCL's estimate
    channels: int
    threads: int


def log2i(n: int) -> int:
    return max(0, int(n).bit_length() - 1)


def _nsteps(coll: str, p: int) -> int:
    return 2 * (p - 1) if coll == "all_reduce" else p - 1 if coll in (
        "all_gather", "reduce_scatter") else p


def _runs(c: Comm, coll: str, a: str, p: str) -> bool:
    """Whether NCCL's tuner prices (coll, a, p) at all (tuning.cc's skips and enables)."""
    if coll in ("broadcast", "reduce") and a != "Ring":
        return False
    if coll in ("all_gather", "reduce_scatter") and a not in ("PAT", "Ring", "NVLS",
                                                               "CollNetDirect"):
        return False
    if coll == "all_reduce" and a == "PAT":
        return False
    if a in ("NVLS", "NVLSTree") and p != "Simple":
        return False
    if a == "PAT" and (p != "Simple" or c.nodes != c.ranks):  # ncclPatEnable: 1 GPU per node
        return False
    if p == "LL128" and c.intra != "nvlink":  # enabled only up to NVB paths (tuning.cc)
        return False
    if a == "NVLSTree" and c.nodes == 1:
        return False
    if a.startswith("CollNet") and (not c.collnet or a == "CollNetChain"):
        return False
    if a in ("NVLS", "NVLSTree") and (not c.nvls or (coll != "all_reduce"
                                                     and c.ppn > K.MAX_NVLS_ARITY)):
        return False
    if a == "NVLS" and c.nodes > 1 and (not c.collnet or coll != "all_reduce"):
        return False
    if a == "CollNetDirect" and (coll != "all_reduce" or c.ppn > 8):
        return False
    return a not in c.disable and not (a == "NVLSTree" and "NVLS" in c.disable)


def _index2(c: Comm) -> int:
    return min(c.nodes, 3) - 1


def bandwidth(c: Comm, coll: str, a: str, p: str) -> float:
    """NCCL's algorithm bandwidth (GB/s) for (coll, a, p): its bus bandwidth over the graph's
    channels, refined per protocol, converted to algorithm bandwidth; 0 where it never runs."""
    if not _runs(c, coll, a, p):
        return 0.0
    g, gen, i2 = c.graph(a), c.generation, _index2(c)
    collnet = a.startswith("CollNet")
    bw = g.bw_intra if c.nodes <= 2 or collnet else g.bw_inter
    if a in ("NVLS", "NVLSTree"):
        if g.channels < 2:
            return 0.0
        intra = g.bw_intra * K.NVLS_EFFICIENCY[gen] * (g.channels - 1) / g.channels
        intra *= 2.0 if coll == "all_reduce" else (c.ppn - 1) / c.ppn
        inter = g.bw_inter * (2 if c.nodes <= 2 and a == "NVLSTree" else 1)
        bw = min(intra, inter, K.PER_CH_NVLS_TREE[gen][i2] if a == "NVLSTree" else math.inf)
    bus = g.channels * bw
    ll_max = (K.LL_MAX[gen] if c.nodes == 1 else K.LL_MAX_CPU["amd" if c.cpu == "amd"
                                                               else "intel"])[i2]
    if a == "Ring" and p == "LL":
        bus = min(ll_max, bus * 0.5)
    if a == "Ring" and p == "LL128":
        bus = min(bus * 0.92, g.channels * K.PER_CH_RING_LL128[gen][i2])
    if a == "Tree" and coll == "all_reduce":
        bus = min(bus * 0.92, g.channels * K.PER_CH_TREE[gen][i2])
    if a == "Tree" and p == "LL":
        bus = min(bus / 3.8, ll_max)
    if a == "Tree" and p == "LL128":
        bus = min(bus * (7.0 / 9.0 if c.nodes == 1 else 120.0 / 128.0),
                  g.channels * K.PER_CH_TREE_LL128[gen][i2])
    if a == "Tree" and c.tree_pattern == "tree":
        bus *= 0.85
    if a == "PAT":
        bus *= 0.75
    if a == "CollNetDirect":
        factor = c.ppn / g.channels  # GPUs per NIC
        bus /= factor - (factor - 1) / 2
        bus *= 0.85 if gen in ("hopper", "blackwell") else 1.0
    if not (a != "Ring" and coll in ("all_gather", "reduce_scatter")):
        ratio = c.ranks / _nsteps(coll, c.ranks) if a in ("Ring", "NVLS", "NVLSTree") else 0.5
        bus *= ratio
    return bus


def latency(c: Comm, coll: str, a: str, p: str) -> float:
    """NCCL's latency (us) of one call of (coll, a, p)."""
    pi = K.PROTOCOLS.index(p)
    g = c.graph(a)
    intra_lat = K.HW[c.intra][a][pi]
    inter_lat = (K.HW["net"]["Tree"][pi] if c.ppn == 1 else K.HW["net"][a][pi]) + g.latency_inter
    if p == "Simple":
        inter_lat += g.latency_inter  # the flush
    lat = K.BASE[a][pi]
    n, l = c.nodes, c.ranks // c.nodes  # noqa: E741
    steps = _nsteps(coll, c.ranks)
    if a == "Ring":
        if coll in ("broadcast", "reduce"):
            hw = c.intra if n == 1 else "net"
            if g.same_channels:
                return lat + K.HW[hw]["Ring"][pi]
            hop = K.HW[hw]["Tree" if p == "Simple" else "Ring"][pi]  # channels differ: chunks
            return lat + steps * hop
        over = 0.0
        if n > 1:
            over = c.net_overhead if c.net_overhead is not None else K.NET_OVERHEAD[c.cpu]
            over *= 3 if p == "Simple" else 1
        inter_steps = 0 if n == 1 else 2 * (n - 1) if coll == "all_reduce" else n - 1
        return lat + (steps - inter_steps) * max(intra_lat, over) + inter_steps * inter_lat
    if a == "Tree":
        return lat + (2 * ((l - 1) * intra_lat + log2i(n) * inter_lat)
                      if coll == "all_reduce" else 0.0)
    if a == "CollNetDirect":
        return lat + 2 * (min(1, l - 1) * intra_lat + (l - 1) * 0.4) + inter_lat
    if a == "NVLS":
        return intra_lat + (inter_lat if n > 1 else 0.0)
    if a == "NVLSTree":
        return lat + intra_lat + 2 * log2i(n) * inter_lat
    if a == "PAT":
        return lat + log2i(n) * (inter_lat / 3.5) + c.ranks * 2.8
    return lat


def algo_time(c: Comm, coll: str, a: str, p: str, nbytes: int) -> float | None:
    """NCCL's estimated time (us) of one call (ncclTopoGetAlgoTime), or None where it never
    runs: the tree's correction for mid sizes, the ring's plateau across nodes."""
    bw = bandwidth(c, coll, a, p)
    if bw == 0:
        return None
    lat = latency(c, coll, a, p)
    log_size = log2i(nbytes >> 6) if nbytes >> 6 else -1
    pi = K.PROTOCOLS.index(p)
    if a == "Tree" and coll == "all_reduce" and 0 <= log_size < 23:
        bw *= K.TREE_CORRECTION[p][log_size]
    if a == "NVLSTree" and coll == "all_reduce" and 0 <= log_size < 24 and \
            c.generation == "blackwell" and c.cpu in ("intel", "amd"):
        bw *= K.TREE_CORRECTION[p][log_size]
    ring = c.graph("Ring")
    if a == "Ring" and pi == 2 and c.nodes > 1 and coll == "all_reduce" and \
            nbytes // (ring.channels * c.ranks) >= 64:
        lat *= K.RING_PLATEAU["volta" if c.generation == "volta" else "newer"]
    return lat + nbytes / (1000 * bw)


def channels(c: Comm, a: str, p: str, nbytes: int) -> tuple[int, int]:
    """Channels and threads NCCL runs (a, p) with at ``nbytes`` (topoGetAlgoInfo): Ring and
    Tree drop channels, then halve threads, while the message is under channels x threads x
    the protocol's bytes per thread; NVLS keeps its own channel count."""
    nc = c.graph("Ring").channels
    nt = 640 if a in ("NVLS", "NVLSTree", "CollNetDirect") else K.MAX_THREADS[p]
    threshold = K.THREAD_THRESHOLD[p] * (c.ranks if a == "Ring" and p == "LL" else 1)
    if a in ("NVLS", "NVLSTree"):
        nc = c.graph("NVLS").channels if a == "NVLSTree" or c.nodes == 1 else min(
            c.graph("NVLS").channels, nc)
    elif a != "CollNetDirect":
        while nbytes < nc * nt * threshold and nc >= 2:
            nc -= 1
    if a not in ("NVLS", "NVLSTree", "CollNetDirect"):
        while nbytes < nc * nt * threshold and nt % 128 == 0:
            nt //= 2
    if p == "Simple":
        nt += 32 if a == "Ring" else 128 if a == "Tree" else 0
    nt = max(nt, 96)
    return nc, 640 if a in ("Tree", "PAT") else nt


def decide(c: Comm, coll: str, nbytes: int, only: str | None = None,
           disable: Collection[str] = ()) -> Decision | None:
    """NCCL's pick for one call of ``nbytes``: the fastest (algorithm, protocol) by its model,
    ties to the first in NCCL's order; None where nothing runs. ``only`` forces an algorithm
    (NCCL_ALGO), ``disable`` removes some (``NVLS`` removes NVLSTree too)."""
    if c.ranks == 1:
        return None
    off = set(disable) | ({"NVLSTree"} if "NVLS" in disable else set())  # NCCL_NVLS_ENABLE=0
    best: tuple[float, str, str] | None = None
    for a in K.ALGORITHMS:
        if (only and a != only) or a in off:
            continue
        for p in K.PROTOCOLS:
            t = algo_time(c, coll, a, p, nbytes)
            if t is not None and (best is None or t < best[0]):
                best = (t, a, p)
    if best is None:
        return None
    nc, nt = channels(c, best[1], best[2], nbytes)
    return Decision(best[1], best[2], best[0], nc, nt)
