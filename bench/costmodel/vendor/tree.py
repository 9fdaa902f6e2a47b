"""NCCL Tree (all_reduce): a chain inside each node and a double binary tree across nodes (two
complementary trees, half the data each: NCCL's ``ncclGetDtree``, src/graph/trees.cc), derated
by 0.92 for the tree's pipeline (src/graph/tuning.cc; its further 0.85 applies only to the
single-NIC ``TREE`` search pattern, which a rail-aligned fabric does not use). Across nodes the
busiest node moves ``load(N)`` x S each way over its NICs (S at 2 nodes, 1.5 S at 3, 2 S from
4 nodes on, against a ring's 2(p-1)/p S): why a tree beats the ring on few nodes. Latency:
base + 2 x ((l-1) intra hops + log2(N) network hops)."""

from __future__ import annotations

from functools import lru_cache

from bench.costmodel.vendor.base import US, Job, VendorAlgorithm, always
from bench.costmodel.vendor.constants import BASE as _BASE
from bench.costmodel.vendor.constants import HW as _HW
from bench.costmodel.vendor.constants import PROTOCOLS

EFFICIENCY = 0.92
BASE = dict(zip(PROTOCOLS, _BASE["Tree"]))
HOP = {hw: dict(zip(PROTOCOLS, _HW[hw]["Tree"])) for hw in ("nvlink", "pci", "net")}


def _btree(n: int, rank: int) -> tuple[int, int]:
    """(parent or -1, children) of ``rank`` in NCCL's binary tree over n ranks."""
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, int(n > 1)
    up = (rank ^ bit) | (bit << 1)
    up = rank ^ bit if up >= n else up
    low = bit >> 1
    kids = int(low > 0)  # down0 = rank - low is always in range
    d1 = rank + low if low else -1
    while d1 >= n:
        low >>= 1
        d1 = rank + low if low else -1
    return up, kids + int(d1 != -1)


@lru_cache(maxsize=64)
def load(n: int) -> float:
    """Most bytes any node sends (and receives) across nodes, in units of S, in NCCL's double
    binary tree over n nodes: each tree carries S/2 over every edge, once each way."""
    if n < 2:
        return 0.0
    if n > 4096:  # every larger tree has a node inside one tree with two children (2 S)
        return 2.0
    worst = 0
    for r in range(n):
        up0, k0 = _btree(n, r)
        other = (r - 1) % n if n % 2 else n - 1 - r  # the second tree: shifted or mirrored
        up1, k1 = _btree(n, other)
        worst = max(worst, k0 + (up0 != -1) + k1 + (up1 != -1))
    return worst / 2


def across(job: Job) -> float:
    """Bus bandwidth the inter-node double binary tree sustains (before derating)."""
    return 2 * (job.p - 1) / job.p * job.node_net / load(job.nodes)


def busbw(job: Job, collective: str) -> float:
    inside = (job.p - 1) / job.p * job.ring_intra
    return EFFICIENCY * (inside if job.nodes == 1 else min(inside, across(job)))


def latency(job: Job, collective: str, proto: str) -> float:
    return (job.base(BASE, proto) + 2 * ((job.l - 1) * job.hop(HOP, job.hw, proto)
                                         + job.log2_nodes * HOP["net"][proto])) * US


ALGORITHM = VendorAlgorithm("Tree", ("all_reduce",), ("LL", "LL128", "Simple"), always, busbw,
                            latency, order=0)
