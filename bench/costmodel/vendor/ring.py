"""NCCL Ring: k channels, each a ring over every rank that enters and leaves each node through a
different device and that device's NIC (rail-aligned), so all of a node's NICs carry the ring;
broadcast and reduce run it as a pipelined chain. Latency (NCCL's form): a base per protocol
plus one hop latency per step, the network's for the steps that cross nodes (Tree's network hop
with one rank per node, where nothing hides it); with several nodes an intra step costs at least
the network proxy's overhead (1 us, 3 us with Simple). Figures from NCCL's tuning table
(src/graph/tuning.cc)."""

from __future__ import annotations

from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor import tree
from bench.costmodel.vendor.base import US, Job, VendorAlgorithm, always, steps

BASE = dict(zip(K.PROTOCOLS, K.BASE["Ring"]))
HOP = {hw: dict(zip(K.PROTOCOLS, K.HW[hw]["Ring"])) for hw in ("nvlink", "pci", "net")}
# the network proxy's overhead per step across nodes (Intel), tripled for Simple (tuning.cc)
NET_OVERHEAD = {p: K.NET_OVERHEAD["intel"] * (3 if p == "Simple" else 1) for p in K.PROTOCOLS}


def busbw(job: Job, collective: str) -> float:
    return job.ring_intra if job.nodes == 1 else min(job.ring_intra, job.node_net)


def latency(job: Job, collective: str, proto: str) -> float:
    n = steps(collective, job.p)
    inter = 0 if job.nodes == 1 else (2 if collective == "all_reduce" else 1) * (job.nodes - 1)
    hop = job.hop(HOP, job.hw, proto)
    intra = hop if job.nodes == 1 else max(hop, NET_OVERHEAD[proto])
    net = (tree.HOP if job.l == 1 else HOP)["net"][proto]
    return (job.base(BASE, proto) + (n - inter) * intra + inter * net) * US


ALGORITHM = VendorAlgorithm(
    "Ring", ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"),
    ("LL", "LL128", "Simple"), always, busbw, latency, order=1)
