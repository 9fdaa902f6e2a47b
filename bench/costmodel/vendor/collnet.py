"""NCCL CollNet (Direct): the network switches reduce (SHARP). Inside a node each device
reduce-scatters to its 1/l shard and all-gathers it back over its port; each shard crosses its
device's NICs once each way at the fabric's CollNet bandwidth. NCCL derates it by 0.85 on Hopper
and later (src/graph/tuning.cc); this model applies that factor always. Latency (NCCL's form):
2 intra hops + 0.4 us per local rank + one network hop of 31 us."""

from __future__ import annotations

from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor import nvls
from bench.costmodel.vendor.base import US, Job, VendorAlgorithm

EFFICIENCY = 0.85
HOP_NVLINK, HOP_PCI, HOP_NET = (K.HW[hw]["CollNetDirect"][2] for hw in ("nvlink", "pci", "net"))
ARITY = 0.4  # us of serialization per local rank (tuning.cc)


def applies(job: Job, collective: str) -> str | None:
    if job.fabric.collnet is None:
        return "no in-network reduction (fabric.collnet)"
    return "one node" if job.nodes < 2 else None


def busbw(job: Job, collective: str) -> float:
    f = 2 * (job.p - 1) / job.p
    inside = f * job.ring_intra / (2 * (job.l - 1) / job.l) if job.l > 1 else float("inf")
    return EFFICIENCY * min(inside, nvls.shards(job))


def latency(job: Job, collective: str, proto: str) -> float:
    hop = HOP_NVLINK if job.hw == "nvlink" else HOP_PCI
    return (2 * (min(1, job.l - 1) * hop + (job.l - 1) * ARITY) + HOP_NET) * US


ALGORITHM = VendorAlgorithm("CollNet", ("all_reduce",), ("Simple",), applies, busbw, latency,
                            order=2)
