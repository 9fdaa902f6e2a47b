"""NCCL's three protocols, as bandwidth efficiency and per-channel caps (the form of NCCL's
``src/graph/tuning.cc``; its figures for Hopper, stated there as model constants):

- ``Simple``: large chunks and a fence per step: full bandwidth, the highest latency;
- ``LL128``: 128-byte lines with 8 bytes of flags: 120/128 of the bandwidth (NCCL models 0.92),
  at most 36.7 GB/s per channel; on NVLink (NVSwitch) nodes only;
- ``LL``: 8-byte lines of 4 data bytes and 4 flag bytes: half the bandwidth, at most 141 GB/s
  on one node and 45 GB/s across nodes; the lowest latency.

NVLS, NVLSTree and CollNet run Simple only (their files say so).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.costmodel.vendor.base import Job


@dataclass(frozen=True)
class Protocol:
    name: str
    efficiency: float
    per_channel_cap: float | None = None  # bytes/s per channel
    cap_one_node: float | None = None  # bytes/s in all
    cap_nodes: float | None = None

    def bandwidth(self, job: Job, busbw: float) -> float:
        bw = busbw * self.efficiency
        if self.per_channel_cap is not None:
            bw = min(bw, self.per_channel_cap * job.fabric.channels)
        cap = self.cap_one_node if job.nodes == 1 else self.cap_nodes
        return min(bw, cap) if cap is not None else bw

    def available(self, job: Job) -> bool:
        return self.name != "LL128" or job.fabric.switch == "nvswitch"


PROTOCOL = {p.name: p for p in (
    Protocol("LL", 0.5, cap_one_node=141e9, cap_nodes=45e9),
    Protocol("LL128", 0.92, per_channel_cap=36.7e9),
    Protocol("Simple", 1.0),
)}
