"""NCCL NVLSTree (all_reduce across nodes): NVLS reduce-scatter inside each node, a tree across
nodes for each device's shard over that device's own NICs (its rail), NVLS all-gather; the parts
run pipelined, so the slower bounds the time (the tree part derated as Tree beyond two nodes).
Latency (NCCL's form): one NVLink hop (25 us) + 2 log2(N) network hops of 20.9 us."""

from __future__ import annotations

from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor import nvls, tree
from bench.costmodel.vendor.base import US, Job, VendorAlgorithm

HOP_NVLINK, HOP_NET = K.HW["nvlink"]["NVLSTree"][2], K.HW["net"]["NVLSTree"][2]


def applies(job: Job, collective: str) -> str | None:
    if job.fabric.nvls is None:
        return "no in-switch reduction (fabric.nvls)"
    if job.nodes < 2:
        return "one node (NVLS instead)"
    return "one rank per node" if job.l < 2 else None


def busbw(job: Job, collective: str) -> float:
    across = tree.across(job) * (1.0 if job.nodes == 2 else tree.EFFICIENCY)
    return min(nvls.intra(job, collective), across)


def latency(job: Job, collective: str, proto: str) -> float:
    return (HOP_NVLINK + 2 * job.log2_nodes * HOP_NET) * US


ALGORITHM = VendorAlgorithm("NVLSTree", ("all_reduce",), ("Simple",), applies, busbw, latency,
                            order=5)
