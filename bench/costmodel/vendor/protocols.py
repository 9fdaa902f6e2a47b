"""NCCL's three protocols as the vendor model prices them: a bandwidth efficiency and the caps of
NCCL's tuning tables for the fabric's GPU generation (:mod:`bench.costmodel.vendor.constants`;
docs/predict.md, "The vendor model"). LL moves 8 bytes of data per 16 (flag words): half the
link, capped at NCCL's ``llMaxBws``; LL128 120 of 128 bytes (0.92 in NCCL's model), capped per
channel; Simple the link. LL128 runs on NVLink (NVSwitch) nodes only; NVLS, NVLSTree and CollNet
run Simple only."""

from __future__ import annotations

from dataclasses import dataclass

from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor.base import Job

GB = 1e9


@dataclass(frozen=True)
class Protocol:
    name: str
    efficiency: float

    def cap(self, job: Job, channels: int) -> float:
        """Bytes/s the protocol can carry over ``channels`` channels (NCCL's caps)."""
        f, i2 = job.fabric, min(job.nodes, 3) - 1
        if self.name == "LL" and f.ll_cap is not None:
            return f.ll_cap
        if self.name == "LL":
            row = K.LL_MAX[f.generation] if job.nodes == 1 else K.LL_MAX_CPU[
                "amd" if f.cpu == "amd" else "intel"]
            return row[i2] * GB
        if self.name == "LL128":
            return channels * K.PER_CH_RING_LL128[f.generation][i2] * GB
        return float("inf")

    def bandwidth(self, job: Job, busbw: float, channels: int | None = None) -> float:
        """The protocol's bus bandwidth on an algorithm of Simple bus bandwidth ``busbw`` run
        over ``channels`` of the fabric's channels (default all): Simple and LL128 get the
        channels' share of it; LL's ceiling is NCCL's total (llMaxBw), not per channel."""
        full = job.fabric.channels
        used = full if channels is None else min(channels, full)
        share = 1.0 if self.name == "LL" else used / full
        return min(busbw * self.efficiency * share, self.cap(job, used))

    def available(self, job: Job) -> bool:
        return self.name != "LL128" or job.fabric.switch == "nvswitch"


PROTOCOL = {p.name: p for p in (Protocol("LL", 0.5), Protocol("LL128", 0.92),
                                Protocol("Simple", 1.0))}
