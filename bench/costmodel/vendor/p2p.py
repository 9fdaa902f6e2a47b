"""Point-to-point collectives (alltoall, alltoallv, sendrecv): NCCL runs them as grouped sends and
receives, outside its tuning table. Alltoallv's S is the busiest rank's bytes, priced as
alltoall's (exact for the balanced matrices; a skewed one at its busiest rank as if its blocks
were even). Latency: one hop (NCCL's Simple ring hop, 3.4 us NVLink, 5.7 us PCIe, 14 us
network) or the fabric's ``latency.p2p_base_us``, plus ``latency.p2p_peer_us`` (default 1 us,
the proxy's overhead) per peer: NCCL posts a send and a receive to each peer in turn."""

from __future__ import annotations

from bench.costmodel.vendor.base import US, Job, VendorAlgorithm, always

HOP = {"nvlink": 3.4, "pci": 5.7, "net": 14.0}


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
    f = job.fabric
    peers = 1 if collective == "sendrecv" else job.p - 1
    base = f.p2p_base_us if f.p2p_base_us is not None else HOP["net" if job.nodes > 1 else job.hw]
    return (base + peers * f.p2p_peer_us) * US


ALGORITHM = VendorAlgorithm("P2P", ("alltoall", "alltoallv", "sendrecv"), ("Simple",), always, busbw, latency,
                            order=7)
