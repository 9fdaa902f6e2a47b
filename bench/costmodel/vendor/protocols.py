"""NCCL's three protocols, as bandwidth efficiency and per-channel caps (the form of NCCL's
``src/graph/tuning.cc``, its figures for Hopper; docs/predict.md, "The vendor model"). LL128
runs on NVLink (NVSwitch) nodes only; NVLS, NVLSTree and CollNet run Simple only."""

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
