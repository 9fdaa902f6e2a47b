"""NCCL Tree (all_reduce): a chain inside each node and a double binary tree across nodes (two
complementary trees, half the data each), derated by 0.92 x 0.85 as NCCL does
(src/graph/tuning.cc: 0.92 for the tree's pipeline, 0.85 for a balanced tree pattern). Latency:
base + 2 x ((l-1) intra hops + log2(N) network hops)."""

from __future__ import annotations

from bench.costmodel.vendor.base import US, Job, VendorAlgorithm, always

EFFICIENCY = 0.92 * 0.85
BASE = {"LL": 6.8, "LL128": 14.0, "Simple": 8.4}
HOP = {"nvlink": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0},
       "pci": {"LL": 1.0, "LL128": 1.9, "Simple": 4.0},
       "net": {"LL": 5.0, "LL128": 8.5, "Simple": 14.0}}


def across(job: Job) -> float:
    """Bus bandwidth the inter-node double binary tree sustains (before derating)."""
    f = (job.p - 1) / job.p
    return f * job.node_net * (2.0 if job.nodes == 2 else 1.0)


def busbw(job: Job, collective: str) -> float:
    inside = (job.p - 1) / job.p * job.ring_intra
    return EFFICIENCY * (inside if job.nodes == 1 else min(inside, across(job)))


def latency(job: Job, collective: str, proto: str) -> float:
    return (BASE[proto] + 2 * ((job.l - 1) * HOP[job.hw][proto]
                               + job.log2_nodes * HOP["net"][proto])) * US


ALGORITHM = VendorAlgorithm("Tree", ("all_reduce",), ("LL", "LL128", "Simple"), always, busbw,
                            latency, order=0)
