"""The vendor's choice per size and its time: NCCL's own tuning model picks the algorithm and
protocol (:mod:`bench.costmodel.vendor.tuning`, on graphs this module derives from the fabric),
and the vendor model prices that pick on the fabric (``latency + bytes / algbw``, algbw = the
protocol's bandwidth over the channels NCCL runs at that size / the collective's busbw factor).
NCCL's pick is not always the fastest: :func:`fastest` names the one that would be.
Point-to-point collectives (alltoall, sendrecv) are outside NCCL's tuner: the fastest is taken.

``disable`` removes algorithms by name (``NVLS`` also removes ``NVLSTree``, as
``NCCL_NVLS_ENABLE=0`` does); ``only`` forces one (``NCCL_ALGO``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from bench.costmodel.fabric import Fabric
from bench.costmodel.model import Placed
from bench.costmodel.vendor import algorithms, nvlstree, ring
from bench.costmodel.vendor import constants as K
from bench.costmodel.vendor import nvls as nvls_alg
from bench.costmodel.vendor.base import Job
from bench.costmodel.vendor.protocols import PROTOCOL
from bench.costmodel.vendor.tuning import Comm, Graph, channels, decide
from kernels import collective as coll

NCCL_NAME = {"CollNet": "CollNetDirect"}  # this model's algorithm name -> NCCL's


@dataclass(frozen=True)
class Choice:
    algorithm: str
    protocol: str
    time_s: float
    busbw: float  # bytes/s at this size
    channels: int | None = None  # the channels NCCL runs at this size (None: outside its tuner)

    @property
    def label(self) -> str:
        return f"{self.algorithm}/{self.protocol}"


def nccl_comm(job: Job, collective: str) -> Comm:
    """What NCCL's topology search would hand its tuner on this fabric: every graph's
    per-channel bandwidth is what the vendor model says that algorithm sustains on large
    messages, over its channels (ring and tree share the ring's graph; NVLS runs NCCL's NVLS
    channel count, its inter-node part the tree's bandwidth beyond two nodes)."""
    f, ch = job.fabric, job.fabric.channels
    gb = 1e9
    g = Graph(ch, job.ring_intra / ch / gb, ring.busbw(job, collective) / ch / gb
              if job.nodes > 1 else job.ring_intra / ch / gb)
    graphs = {"Ring": g, "Tree": g}
    if f.nvls is not None and job.l > 1:
        key = "blackwell_nodes" if f.generation == "blackwell" and job.nodes > 1 else f.generation
        nch = K.NVLS_CHANNELS.get(key, 16)
        eff = K.NVLS_EFFICIENCY[f.generation] or 1.0
        one = nvls_alg.intra(job, "all_reduce")  # busbw: NCCL's busBw before its algbw ratio
        intra = one / nch / gb / (2 * eff * (nch - 1) / nch)
        if job.nodes == 1:
            inter = one / nch / gb
        elif f.collnet is not None:  # NVLS with SHARP across nodes: the shards' bandwidth
            inter = nvls_alg.busbw(job, "all_reduce") / nch / gb
        else:  # NVLSTree: NCCL doubles the inter-node part itself on two nodes
            inter = nvlstree.busbw(job, "all_reduce") / nch / gb / (2 if job.nodes == 2 else 1)
        graphs["NVLS"] = Graph(nch, intra, inter)
    if f.collnet is not None:
        graphs["CollNetDirect"] = Graph(job.l, job.ring_intra / job.l / gb,
                                        f.collnet * f.nic_efficiency / gb)
    return Comm(job.nodes, job.p, graphs, generation=f.generation,
                intra="nvlink" if f.switch == "nvswitch" else "pci", cpu=f.cpu,
                nvls=f.nvls is not None, collnet=f.collnet is not None)


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


def _job(placed: Placed, fabric: Fabric) -> Job | str:
    job = Job.of(placed, fabric)
    if job.p == 1:
        return "one rank: nothing to move"
    if job.l > fabric.devices:
        return (f"vendor model: {job.l} ranks on a node of the fabric's {fabric.devices} devices "
                "(one rank per device)")
    return job


def _priced(job: Job, collective: str, nbytes: int, alg: str, proto: str,
            nch: int | None) -> Choice | None:
    factor = coll.resolve(collective).busbw(job.p)
    for a in algorithms():
        if a.name == alg and collective in a.collectives and a.applies(job, collective) is None:
            bw = PROTOCOL[proto].bandwidth(job, a.busbw(job, collective),
                                           nch if alg in ("Ring", "Tree") else None)
            t = a.latency(job, collective, proto) + nbytes * factor / bw
            return Choice(alg, proto, t, nbytes * factor / t, nch)
    return None


def fastest(placed: Placed, fabric: Fabric, collective: str, nbytes: int,
            disable: Collection[str] = (), only: str | None = None) -> Choice | str:
    """The fastest candidate on the fabric for ``nbytes`` (what NCCL should pick), or why none
    runs."""
    spec = coll.resolve(collective)
    job = _job(placed, fabric)
    if isinstance(job, str):
        return job
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


def choose(placed: Placed, fabric: Fabric, collective: str, nbytes: int,
           disable: Collection[str] = (), only: str | None = None) -> Choice | str:
    """NCCL's pick for ``nbytes`` (the size nccl-tests reports) priced on the fabric, or why
    none runs."""
    spec = coll.resolve(collective)
    job = _job(placed, fabric)
    if isinstance(job, str) or spec.name not in ("all_reduce", "all_gather", "reduce_scatter",
                                                 "broadcast", "reduce"):
        return fastest(placed, fabric, collective, nbytes, disable, only)
    comm = nccl_comm(job, spec.name)
    d = decide(comm, spec.name, nbytes, NCCL_NAME.get(only or "", only),
               [NCCL_NAME.get(x, x) for x in disable])
    ours = {v: k for k, v in NCCL_NAME.items()}
    if d is not None:
        alg = ours.get(d.algorithm, d.algorithm)
        got = _priced(job, spec.name, nbytes, alg, d.protocol, d.channels)
        if got is not None:
            return got
    return fastest(placed, fabric, collective, nbytes, disable, only)


__all__ = ["Choice", "candidates", "channels", "choose", "fastest", "nccl_comm"]
