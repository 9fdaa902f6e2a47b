"""The vendor's choice per size: every (algorithm, protocol) that runs the collective on this
fabric priced as ``latency + bytes / algbw`` (algbw = the protocol's bandwidth / the
collective's busbw factor), the fastest taken; ties go to NCCL's algorithm order.

``disable`` removes algorithms by name (``NVLS`` also removes ``NVLSTree``, as
``NCCL_NVLS_ENABLE=0`` does); ``only`` forces one (``NCCL_ALGO``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bench.costmodel.fabric import Fabric
from bench.costmodel.model import Placed
from bench.costmodel.vendor import algorithms
from bench.costmodel.vendor.base import Job
from bench.costmodel.vendor.protocols import PROTOCOL
from kernels import collective as coll


@dataclass(frozen=True)
class Choice:
    algorithm: str
    protocol: str
    time_s: float
    busbw: float  # bytes/s at this size

    @property
    def label(self) -> str:
        return f"{self.algorithm}/{self.protocol}"


def candidates(job: Job, collective: str, disable: Collection[str] = (),
               only: str | None = None) -> list[tuple[str, str, float, float]]:
    """(algorithm, protocol, latency s, large-size busbw bytes/s) of every candidate."""
    off = set(disable) | ({"NVLSTree"} if "NVLS" in disable else set())
    out = []
    for alg in algorithms():
        if collective not in alg.collectives or alg.name in off or (only and alg.name != only):
            continue
        if alg.applies(job, collective) is not None:
            continue
        bw = alg.busbw(job, collective)
        for name in alg.protocols:
            proto = PROTOCOL[name]
            if proto.available(job):
                out.append((alg.name, name, alg.latency(job, collective, name),
                            proto.bandwidth(job, bw)))
    return out


def choose(placed: Placed, fabric: Fabric, collective: str, nbytes: int,
           disable: Collection[str] = (), only: str | None = None) -> Choice | str:
    """The fastest candidate for ``nbytes`` (the size nccl-tests reports), or why none runs."""
    spec = coll.resolve(collective)
    job = Job.of(placed, fabric)
    if job.p == 1:
        return "one rank: nothing to move"
    if job.l > fabric.devices:
        return (f"vendor model: {job.l} ranks on a node of the fabric's {fabric.devices} devices "
                "(one rank per device)")
    factor = spec.busbw(job.p)
    best: Choice | None = None
    for alg, proto, lat, bw in candidates(job, spec.name, disable, only):
        t = lat + nbytes * factor / bw
        if best is None or t < best.time_s:
            best = Choice(alg, proto, t, nbytes * factor / t)
    if best is None:
        what = f"{only} " if only else ""
        return f"vendor model: no {what}algorithm runs {spec.name} on this fabric"
    return best
