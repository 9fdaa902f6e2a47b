"""Point-to-point collectives (alltoall, alltoallv, sendrecv): NCCL runs them as grouped sends and
receives, outside its tuning table. Alltoallv's S is the busiest rank's bytes, priced as
alltoall's (exact for the balanced matrices; a skewed one at its busiest rank as if its blocks
were even). Latency: one hop (NCCL's Simple ring hop, 3.4 us NVLink, 5.7 us PCIe, 14 us
network) plus the network proxy's overhead (1 us) per remote peer."""

from __future__ import annotations

from bench.costmodel.vendor.base import US, Job, VendorAlgorithm, always

HOP = {"nvlink": 3.4, "pci": 5.7, "net": 14.0}
PER_PEER = 1.0


def busbw(job: Job, collective: str) -> float:
    p, l = job.p, job.l  # noqa: E741
    port = job.fabric.port * job.fabric.ring_efficiency
    if collective == "sendrecv":
        return port if job.nodes == 1 else min(port, job.fabric.node_net(1))
    t_intra = (l - 1) / p / port
    t_net = 0.0 if job.nodes == 1 else l * (p - l) / p / job.node_net
    t = max(t_intra, t_net)
    return (p - 1) / p / t if t > 0 else port


def latency(job: Job, collective: str, proto: str) -> float:
    remote = 0 if job.nodes == 1 else (1 if collective == "sendrecv" else job.p - job.l)
    return (HOP["net" if job.nodes > 1 else job.hw] + remote * PER_PEER) * US


ALGORITHM = VendorAlgorithm("P2P", ("alltoall", "alltoallv", "sendrecv"), ("Simple",), always, busbw, latency,
                            order=7)
