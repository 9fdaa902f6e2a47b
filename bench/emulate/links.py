"""Emulated links: what a message costs on the modelled cluster beyond the host's own link,

    delay = f × (α_c + bytes / rate) − (α_intra + bytes / β_intra),  at least 0

with ``rate`` the cost model's bandwidth for the message among its step's messages and f the
profile's ``slow`` factor (a slow node's own ``intra`` messages wait (f − 1) × their modelled
time). docs/predict.md, "What is delayed"."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.argtypes import CommbenchError
from bench.costmodel.model import INTRA, Placed, TopologyError, parse_topology
from bench.costmodel.net import Net
from bench.costmodel.profile import Profile, ProfileError, load_profile
from bench.emulate.wait import SleepWaiter

# transports that can be emulated: "module:Class" of the wrapper, imported on first use (so
# validating a scenario imports no MPI); it takes the plain transport, the links and a Waiter
EMULATORS: dict[str, str] = {
    "mpi": "bench.emulate.transport:EmulatedMpi",
}


class EmulationError(CommbenchError, ValueError):
    """An emulated cluster that cannot be built; one line naming the profile or topology."""


@dataclass(frozen=True)
class EmulatedLinks:
    """A :class:`bench.costmodel.delay.LinkDelay` for a job placed on a modelled cluster."""

    net: Net
    factors: dict[tuple[int, int], float]  # (src, dst) -> slow factor, where it is not 1

    @property
    def placed(self) -> Placed:
        return self.net.placed

    @property
    def world(self) -> int:
        return self.net.world

    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        """Delay of one message while ``flows`` messages share each resource it crosses (as
        :meth:`step_delays` for a step in which every count is ``flows``)."""
        for r in (src, dst):
            if not 0 <= r < self.world:
                raise ValueError(f"rank {r} is outside the emulated job of {self.world} ranks")
        if flows < 1:
            raise ValueError(f"flows must be >= 1, got {flows}")
        net, c = self.net, int(self.net.cls(src, dst))
        cap = (net.beta[INTRA] if c == INTRA
               else min(net.rank_cap[src], net.rank_cap[dst], net.node_cap))
        return float(self._delays(np.array([src]), np.array([dst]), np.array([float(nbytes)]),
                                  np.array([c]), np.array([cap / flows]))[0])

    def step_delays(self, src: Sequence[int], dst: Sequence[int],
                    nbytes: Sequence[int]) -> np.ndarray:
        """Delay of each message of one step, all of them concurrent (every rank's sends of the
        step): bandwidth shared exactly as the cost model shares it. Empty messages cost 0
        (the cost model drops them)."""
        s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        b = np.asarray(nbytes, dtype=np.float64)
        out = np.zeros(b.shape)
        live = b > 0
        if live.any():
            s, d, b = s[live], d[live], b[live]
            cls = np.asarray(self.net.cls(s, d))  # INTRA, INTER, SPINE
            out[live] = self._delays(s, d, b, cls, self.net.rates(s, d, cls))
        return out

    def _delays(self, s: np.ndarray, d: np.ndarray, b: np.ndarray, cls: np.ndarray,
                rate: np.ndarray) -> np.ndarray:
        net = self.net
        link = net.alpha[cls] + b / rate
        f = np.array([self.factors.get((int(x), int(y)), 1.0) for x, y in zip(s, d)])
        host = net.alpha[INTRA] + b / net.beta[INTRA]
        return np.where(cls == INTRA, (f - 1.0) * link, np.maximum(f * link - host, 0.0))

    def wrap(self, transport: Any) -> Any:
        """``transport`` with these links (its :data:`EMULATORS` entry names the wrapper)."""
        where = EMULATORS.get(transport.name)
        if where is None:
            raise ValueError(f"transport {transport.name} cannot be emulated "
                             f"(emulated: {', '.join(EMULATORS)})")
        mod, _, cls = where.partition(":")
        return getattr(importlib.import_module(mod), cls)(transport, self, SleepWaiter())

    def describe(self) -> dict[str, Any]:
        """Record fields: ``emulated``, the profile (as predictions carry it) and the emulation."""
        prof, placed = self.net.profile, self.placed
        return {"emulated": True, "profile": prof.provenance(),
                "emulation": {"topology": placed.cluster.spec, "job": placed.describe(),
                              "host_link": "intra",
                              "delayed": [c for c in placed.classes_used() if c != "intra"],
                              "slow": [x.as_yaml() for x in prof.slow]}}


def slow_factors(profile: Profile, placed: Placed) -> dict[tuple[int, int], float]:
    """(src, dst) -> the largest ``slow`` factor that applies, both directions."""
    where = profile.path or profile.name
    node_of, out = placed.node_of, {}
    for i, x in enumerate(profile.slow):
        if x.node is not None and x.node >= placed.num_nodes:
            raise EmulationError(f"{where}: slow[{i}].node: {x.node} is outside the "
                                 f"{placed.num_nodes} nodes of {placed.describe()}")
        if x.link is not None and max(x.link) >= placed.world:
            raise EmulationError(f"{where}: slow[{i}].link: rank {max(x.link)} is outside the "
                                 f"{placed.world} ranks of the job")
        pairs = ([(a, b) for a in range(placed.world) for b in range(placed.world)
                  if a != b and x.node in (node_of[a], node_of[b])]
                 if x.node is not None else [x.link, x.link[::-1]])  # type: ignore[list-item,index]
        for pair in pairs:
            out[pair] = max(out.get(pair, 1.0), x.factor)
    return out


def place(cluster_spec: str, world: int) -> Placed:
    """``world`` ranks on the emulated cluster, which must hold them on nodes of equal size
    (records carry one ``ranks_per_node``); :class:`EmulationError` (one line) otherwise."""
    try:
        cluster = parse_topology(cluster_spec)
    except TopologyError as e:
        raise EmulationError(str(e)) from None
    if world > cluster.world:
        raise EmulationError(f"topology {cluster_spec!r} holds {cluster.world} ranks; world size "
                             f"{world} does not fit")
    placed = cluster.place(world)
    if not placed.equal_nodes:
        raise EmulationError(f"topology {cluster_spec!r}: world size {world} lands on nodes of "
                             f"{','.join(map(str, placed.node_sizes))} ranks; emulation needs "
                             f"equal nodes")
    return placed


def link_delay(profile: Profile | str, topology_spec: str, world: int) -> EmulatedLinks:
    """The emulated links of ``world`` ranks on ``topology_spec`` priced by ``profile`` (a
    :class:`Profile`, a preset name or a path); :class:`EmulationError` names what is wrong."""
    try:
        prof = profile if isinstance(profile, Profile) else load_profile(profile)
        placed = place(topology_spec, world)
        need = [c for c in placed.classes_used() if c != "intra"]
        for c in ["intra", *need]:
            prof.link(c)  # ProfileError names the class and the file
        net = Net(placed, prof)
    except ProfileError as e:
        raise EmulationError(str(e)) from None
    return EmulatedLinks(net, slow_factors(prof, placed))
