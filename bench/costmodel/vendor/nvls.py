"""NCCL NVLS: reduction inside the NVSwitch (NVLink SHARP, multimem loads and stores). For
all_reduce each port moves S(1 + 1/l) per direction (the reduced shard in, the multicast store
out); reduce_scatter and all_gather move S. Across nodes NVLS needs in-network reduction
(CollNet / SHARP) for the shards. Latency (NCCL's form): one NVLink hop of 25 us (Simple only),
plus one network hop of 18 us across nodes."""

from __future__ import annotations

from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor.base import US, Job, VendorAlgorithm

HOP_NVLINK, HOP_NET = K.HW["nvlink"]["NVLS"][2], K.HW["net"]["NVLS"][2]


def applies(job: Job, collective: str) -> str | None:
    f = job.fabric
    if f.nvls is None:
        return "no in-switch reduction (fabric.nvls)"
    if job.l < 2:
        return "one rank per node"
    if job.nodes > 1 and f.collnet is None:
        return "across nodes NVLS needs in-network reduction (fabric.collnet)"
    if job.nodes > 1 and collective != "all_reduce":
        return "across nodes only all_reduce"
    return None


def intra(job: Job, collective: str) -> float:
    nvls = job.fabric.nvls or 0.0
    if collective == "all_reduce":
        return 2 * (job.p - 1) / job.p * nvls / (1 + 1 / job.l)
    return (job.p - 1) / job.p * nvls


def shards(job: Job) -> float:
    """Bus bandwidth of the in-network all_reduce of each device's 1/l shard: a device's shard
    S/l crosses its NICs each way at the fabric's CollNet bandwidth."""
    f = job.fabric
    per_device = (f.collnet or 0.0) * max(1.0, f.nics / f.devices) * f.nic_efficiency
    return 2 * (job.p - 1) / job.p * job.l * per_device


def busbw(job: Job, collective: str) -> float:
    return intra(job, collective) if job.nodes == 1 else min(intra(job, collective), shards(job))


def latency(job: Job, collective: str, proto: str) -> float:
    return (HOP_NVLINK + (HOP_NET if job.nodes > 1 else 0.0)) * US


ALGORITHM = VendorAlgorithm("NVLS", ("all_reduce", "all_gather", "reduce_scatter"), ("Simple",),
                            applies, busbw, latency, order=4)
