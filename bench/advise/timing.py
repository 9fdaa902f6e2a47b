"""Collective times from the cost model (:mod:`bench.costmodel`), each on its own group's ranks
as placed in the job: the vendor call at the profile's measured curve, else at NCCL's choice on
its ``fabric``, else the fastest schedule modelled; ``best`` is the fastest schedule. A parameter
server's exchange is priced on the whole job's placement (:meth:`Timer.ps`). docs/advise.md
(Collective times, Parameter server).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bench.advise.calls import Call
from bench.advise.layout import Layout
from bench.argtypes import CommbenchError
from bench.costmodel.model import Cluster, Placed
from bench.costmodel.net import Net
from bench.costmodel.predict import Estimate, estimate_sizes, native_ratio
from bench.costmodel.profile import Link, Profile
from bench.costmodel.vendor.choose import choose
from kernels import collective as coll
from kernels.algorithm import VENDOR, Problem, algorithms_of

P2P = {"send": "sendrecv", "recv": "sendrecv"}


class Timed(NamedTuple):  # in the order of Priced's (bench.advise.step)
    seconds: float  # one call
    algorithm: str  # what runs: "native" (the vendor curve) or a schedule
    best: str  # the fastest schedule the model has


@dataclass(frozen=True)
class GroupNet:
    placed: Placed
    net: Net
    key: int = 0  # the same for groups placed alike (:meth:`Timer._place`): the caches' key


class Timer:
    """Times of calls on a job; caches per (group placement, collective, size, algorithm)."""

    def __init__(self, profile: Profile, cluster: Cluster) -> None:
        self.profile, self.cluster = profile, cluster
        self._nets: dict[tuple[int, int, int, int, int, str], GroupNet] = {}
        self._times: dict[tuple[object, ...], Timed] = {}
        self._ps_times: dict[tuple[object, ...], tuple[float, float]] = {}
        self._jobs: dict[int, tuple[Placed, Counter[int]]] = {}  # world: placed, ranks per node
        self._keys: dict[tuple[object, ...], int] = {}  # a group's placement -> GroupNet.key
        self._placed: dict[tuple[int, tuple[int, ...]], GroupNet] = {}  # (world, ranks)

    def group(self, lay: Layout, axis: str) -> GroupNet:
        key = (lay.data, lay.tensor, lay.pipeline, lay.expert, lay.context, axis)
        got = self._nets.get(key)
        if got is None:  # layouts whose group has the same ranks share it
            ranks = lay.group(axis)[:2] if axis == "pipeline" else lay.group(axis)
            where = (lay.world, tuple(ranks))
            got = self._placed.get(where)
            if got is None:
                got = self._placed[where] = self._place(lay.world, ranks)
            self._nets[key] = got
        return got

    def _place(self, world: int, ranks: list[int]) -> GroupNet:
        got = self._jobs.get(world)
        if got is None:  # the job's placement, once per world size
            job = self.cluster.place(world)
            got = self._jobs[world] = (job, Counter(job.node_of))
        job, per_job = got
        nodes = Counter(job.node_of[r] for r in ranks)
        sizes = tuple(nodes[n] for n in dict.fromkeys(job.node_of[r] for r in ranks))
        share = nodes[job.node_of[ranks[0]]] / per_job[job.node_of[ranks[0]]]
        leaf = self.cluster.nodes_per_leaf
        cl = Cluster(sizes, "block", leaf, self.cluster.oversubscription,
                     self.cluster.nics_per_node, spec=f"group of {len(ranks)}")
        placed = cl.place(len(ranks))
        links = {k: Link(v.alpha, v.beta * (share if k != "intra" else 1.0))
                 for k, v in self.profile.links.items()}
        net = Net(placed, dataclasses.replace(self.profile, links=links))
        # what a group's times depend on (its ranks' nodes and leaves, its links), as a small key
        # for the caches (a placement's tuple of nodes is hashed on every lookup)
        where = (placed.node_of, placed.leaf_of, net.beta.tobytes())
        return GroupNet(placed, net, self._keys.setdefault(where, len(self._keys)))

    def time(self, call: Call, g: GroupNet) -> Timed:
        op = P2P.get(call.op, call.op)
        key = (g.key, op, call.nbytes, call.algorithm)
        got = self._times.get(key)
        if got is None:
            got = self._times[key] = self._best_many(op, [call], g)[0]
        return got

    def prime(self, calls: list[tuple[Call, GroupNet]]) -> None:
        """Time at once the calls not yet cached that share a group, a collective and an
        algorithm: each schedule evaluated for all their sizes in one batch (the same times as
        one by one; a size's first call is the one timed, as :meth:`time` would)."""
        todo: dict[tuple[object, ...], dict[tuple[object, ...], tuple[Call, GroupNet]]] = {}
        for call, g in calls:
            op = P2P.get(call.op, call.op)
            key = (g.key, op, call.nbytes, call.algorithm)
            if key not in self._times:
                todo.setdefault((g.key, op, call.algorithm), {}).setdefault(key, (call, g))
        for (_, op, _), batch in todo.items():
            if len(batch) > 1:
                pairs = list(batch.values())
                got = self._best_many(op, [c for c, _ in pairs], pairs[0][1])
                self._times.update(zip(batch, got))

    def _best_many(self, op: str, calls: list[Call], g: GroupNet) -> list[Timed]:
        """Calls of one collective, one algorithm (or None), on one group."""
        spec, p = coll.resolve(op), g.placed.world
        if p == 1:
            return [Timed(0.0, "none", "none") for _ in calls]
        prs = [Problem(g.placed.topology, max(1, spec.round_count(max(1, c.nbytes // c.itemsize),
                                                                  p)), c.itemsize, spec.name, 0)
               for c in calls]
        found: list[dict[str, Estimate]] = [{} for _ in calls]
        for a in algorithms_of(spec.name):
            if a.is_vendor or (calls[0].algorithm is not None and a.name != calls[0].algorithm):
                continue
            for f, e in zip(found, estimate_sizes(a, prs, g.net)):
                if isinstance(e, Estimate):
                    f[a.name] = e
        return [self._chosen(op, c, pr, f, g) for c, pr, f in zip(calls, prs, found)]

    def _chosen(self, op: str, call: Call, pr: Problem, found: dict[str, Estimate],
                g: GroupNet) -> Timed:
        spec, p = coll.resolve(op), g.placed.world
        if not found:
            raise CommbenchError(f"no algorithm of {op} can be modelled on a group of {p} ranks")
        best = min(found, key=lambda k: found[k].time_s)
        t = found[best].time_s
        ratio = native_ratio(self.profile, spec.name, VENDOR, pr.nbytes, p, "mean") \
            if call.algorithm is None else None  # a step sums its calls: their means add
        if ratio is not None:
            return Timed(t * ratio, VENDOR, best)
        if call.algorithm is None and self.profile.fabric is not None:
            c = choose(g.placed, self.profile.fabric, spec.name, pr.nbytes)
            if not isinstance(c, str):  # the vendor's own choice on the fabric (NCCL's model)
                return Timed(c.time_s, f"{VENDOR} {c.label}", best)
        return Timed(t, best, best)

    def ps(self, workers: int, push: list[int], pull: list[int]) -> tuple[float, float]:
        """(push, pull) seconds of one parameter-server step: ``workers`` workers, then one
        server per entry of ``push`` / ``pull`` (bytes of server s's shard each way)."""
        key = (workers, tuple(push), tuple(pull))
        got = self._ps_times.get(key)
        if got is None:
            got = self._ps_times[key] = self._ps(workers, push, pull)
        return got

    def _ps(self, workers: int, push: list[int], pull: list[int]) -> tuple[float, float]:
        n = len(push)
        net = Net(self.cluster.place(workers + n), self.profile)
        w = np.arange(workers)
        src, dst = np.repeat(w, n), np.tile(np.arange(workers, workers + n), workers)
        size = np.tile(np.asarray(push, dtype=np.float64), workers)
        cls = net.cls(src, dst)
        j = np.tile(np.arange(1, n + 1), workers)  # a worker posts its n sends in server order
        done = net.o * j + net.alpha[cls] + size / net.rates(src, dst, cls)
        ready = np.zeros(n)
        np.maximum.at(ready, dst - workers, done)
        ready += net.gamma * workers * np.asarray(push, dtype=np.float64)
        # pull: server s sends to worker 0, 1, ... in turn
        psrc, pdst = np.repeat(np.arange(workers, workers + n), workers), np.tile(w, n)
        psize = np.repeat(np.asarray(pull, dtype=np.float64), workers)
        pcls = net.cls(psrc, pdst)
        pj = np.tile(np.arange(1, workers + 1), n)
        pdone = ready[psrc - workers] + net.o * pj + net.alpha[pcls] + psize / net.rates(
            psrc, pdst, pcls)
        t_push, t_all = float(ready.max()), float(pdone.max())
        ratio = native_ratio(self.profile, "sendrecv", VENDOR, max(max(push), max(pull)), 2,
                             "mean")
        r = ratio if ratio is not None else 1.0
        return t_push * r, (t_all - t_push) * r
