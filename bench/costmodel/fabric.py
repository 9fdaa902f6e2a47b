"""The fabric of a GPU node and its network, as a profile's ``fabric:`` block (keys, rail affinity
and what contradicts what: docs/predict.md, "Topology and profiles"). The vendor model
(:mod:`bench.costmodel.vendor`) prices on it; the schedule evaluator keeps its α/β per link
class. More ranks per node than devices is no contradiction for the evaluator (a flat ``1x4096``
is a valid what-if); the vendor model declines it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from bench.argtypes import CommbenchError
from bench.costmodel.fields import Count, Fraction, Positive
from bench.scenario_base import Frozen

DEFAULT_CHANNELS_PER_NIC = 2  # channels = 2 per NIC unless stated (NCCL runs ~2 per NIC)


class FabricError(CommbenchError, ValueError):
    """A fabric that contradicts itself or its profile; the profile loader names the file."""


@dataclass(frozen=True)
class Fabric:
    devices: int  # per node
    switch: str  # nvswitch | pcie
    port: float  # bytes/s per device per direction into the node's fabric
    ring_efficiency: float
    nics: int  # per node
    nic_bw: float  # bytes/s per NIC per direction, nominal
    nic_efficiency: float
    network: str  # rail | fat_tree
    rails: int
    channels: int
    nvls: float | None  # achievable bytes/s per port per direction of in-switch reduction
    collnet: float | None  # achievable bytes/s per NIC of in-network reduction
    devices_per_switch: int | None  # pcie
    switch_uplink: float | None  # pcie
    sockets: int
    socket_link: float | None  # pcie, sockets > 1
    generation: str  # which row of NCCL's tuning tables (vendor model)
    cpu: str  # the host CPU: NCCL's LL cap and network overhead across nodes
    trays: int  # an NVLink domain over several trays (NVL72: 72 devices, 18 trays)
    # NCCL's latency constants are Hopper-era: a fabric may scale LL's base and NVLink-hop
    # latencies, and state its point-to-point latency (us: fixed + per peer) and LL's ceiling
    ll_base: float
    ll_nvlink_hop: float
    p2p_base_us: float | None  # None: one Simple hop of the intra or network link
    p2p_peer_us: float
    ll_cap: float | None  # bytes/s of bus bandwidth LL reaches (None: NCCL's llMaxBw)

    @property
    def nic_achievable(self) -> float:
        return self.nic_bw * self.nic_efficiency

    def ring_intra(self, l: int) -> float:  # noqa: E741 - ranks per node
        """Bytes/s a ring sustains per rank inside a node of ``l`` ranks: its slowest link
        share. NVSwitch: each device's own port. PCIe tree: a ring ordered by switch and socket
        crosses each switch uplink and each socket link once per direction."""
        links = [self.port]
        if self.switch == "pcie" and l > (self.devices_per_switch or l):
            links.append(self.switch_uplink or self.port)
            if self.sockets > 1 and l > self.devices // self.sockets:
                links.append(self.socket_link or self.port)
        return min(links) * self.ring_efficiency

    def node_net(self, l: int) -> float:  # noqa: E741
        """Achievable bytes/s per direction of the NICs ``l`` ranks of a node use (rail
        affinity: each rank its own NICs; ranks sharing a NIC share it)."""
        per_rank = self.nics / self.devices
        used = min(self.nics, max(1, math.ceil(l * per_rank)))
        return used * self.nic_achievable


class _Nics(Frozen):
    count: Count | None = None  # None: the profile's nics_per_node
    bytes_per_s: Positive | None = None  # nominal, per direction; None: links.inter's beta
    efficiency: Fraction = 1.0  # nominal: a preset states its measured fraction


class _Network(Frozen):
    kind: Literal["rail", "fat_tree"] = "rail"
    rails: Count | None = None  # None: one per NIC on rails, one on a fat tree


class _Latency(Frozen):
    ll_base: Positive = 1.0
    ll_nvlink_hop: Positive = 1.0
    p2p_base_us: Positive | None = None
    p2p_peer_us: Positive = 1.0


class _Achievable(Frozen):
    bytes_per_s: Positive  # the achievable bandwidth of an in-switch or in-network reduction


class FabricSpec(Frozen):
    """A profile's ``fabric:`` block as written; :meth:`fabric` resolves it against the
    profile's links and NIC count."""

    devices: Count
    switch: Literal["nvswitch", "pcie"]
    port_bytes_per_s: Positive | None = None  # None: links.intra's beta
    ring_efficiency: Fraction = 1.0  # nominal: a preset states its measured fraction
    devices_per_switch: Count | None = None
    switch_uplink_bytes_per_s: Positive | None = None
    sockets: Count = 1
    socket_link_bytes_per_s: Positive | None = None
    nics: _Nics = _Nics()
    network: _Network = _Network()
    nvls: _Achievable | None = None
    collnet: _Achievable | None = None
    channels: Count | None = None  # None: DEFAULT_CHANNELS_PER_NIC per NIC
    generation: Literal["volta", "ampere", "hopper", "blackwell"] = "hopper"  # NCCL's tables
    cpu: Literal["intel", "amd", "arm"] = "intel"
    trays: Count = 1
    latency: _Latency = _Latency()
    ll_bytes_per_s: Positive | None = None

    def fabric(self, *, intra_beta: float | None, inter_beta: float | None,
               nics_per_node: int) -> Fabric:
        """The :class:`Fabric`: port and NIC bandwidth default to the profile's
        ``links.intra`` / ``links.inter`` beta, the NIC count to ``nics_per_node`` (stating
        both differently is a contradiction); :class:`FabricError` otherwise."""
        port = self.port_bytes_per_s or intra_beta
        if port is None:
            raise FabricError("fabric.port_bytes_per_s: needed (no links.intra either)")
        count = self.nics.count or nics_per_node
        if count != nics_per_node:
            raise FabricError(f"fabric.nics.count {count} contradicts nics_per_node "
                              f"{nics_per_node}")
        nic_bw = self.nics.bytes_per_s or inter_beta
        if nic_bw is None:
            raise FabricError("fabric.nics.bytes_per_s: needed (no links.inter either)")
        lat, net = self.latency, self.network
        fab = Fabric(
            devices=self.devices, switch=self.switch, port=port,
            ring_efficiency=self.ring_efficiency, nics=count, nic_bw=nic_bw,
            nic_efficiency=self.nics.efficiency, network=net.kind,
            rails=net.rails or (count if net.kind == "rail" else 1),
            channels=self.channels or DEFAULT_CHANNELS_PER_NIC * count,
            nvls=self.nvls.bytes_per_s if self.nvls else None,
            collnet=self.collnet.bytes_per_s if self.collnet else None,
            devices_per_switch=self.devices_per_switch,
            switch_uplink=self.switch_uplink_bytes_per_s, sockets=self.sockets,
            socket_link=self.socket_link_bytes_per_s, generation=self.generation, cpu=self.cpu,
            trays=self.trays, ll_base=lat.ll_base, ll_nvlink_hop=lat.ll_nvlink_hop,
            p2p_base_us=lat.p2p_base_us, p2p_peer_us=lat.p2p_peer_us,
            ll_cap=self.ll_bytes_per_s)
        _contradictions(fab, self.model_fields_set & _PCIE)
        return fab


_PCIE = {"devices_per_switch", "switch_uplink_bytes_per_s", "sockets", "socket_link_bytes_per_s"}


def _contradictions(f: Fabric, pcie_keys: set[str]) -> None:
    """The first way ``f`` contradicts itself, as a one-line FabricError."""
    pcie = sorted(pcie_keys)
    checks = [
        (f.rails > f.nics, f"{f.rails} rails need at least {f.rails} NICs per node, "
                           f"the node has {f.nics}"),
        (f.network == "rail" and f.nics % f.rails != 0,
         f"{f.nics} NICs do not split evenly over {f.rails} rails"),
        (f.nics % f.devices != 0 and f.devices % f.nics != 0,
         f"{f.devices} devices and {f.nics} NICs: rail affinity needs one to divide the other"),
        (f.nvls is not None and f.switch != "nvswitch",
         "nvls (in-switch reduction) needs switch: nvswitch, not a PCIe tree"),
        ((f.nvls or 0.0) > f.port,
         f"nvls {f.nvls or 0.0:.3g} B/s exceeds the device port {f.port:.3g} B/s"),
        ((f.collnet or 0.0) > f.nic_bw,
         f"collnet {f.collnet or 0.0:.3g} B/s exceeds the NIC's {f.nic_bw:.3g} B/s"),
        (f.switch == "nvswitch" and bool(pcie),
         f"{pcie[0] if pcie else ''} describes a PCIe tree, but switch is nvswitch"),
        (f.switch == "pcie" and f.devices % (f.devices_per_switch or 1) != 0,
         f"{f.devices} devices do not split evenly over PCIe switches of "
         f"{f.devices_per_switch}"),
        (f.devices % f.sockets != 0, f"{f.devices} devices do not split over {f.sockets} sockets"),
        (f.devices % f.trays != 0, f"{f.devices} devices do not split evenly over {f.trays} trays"),
        (f.trays > 1 and f.switch != "nvswitch",
         "trays > 1 (an NVLink domain over trays) needs switch: nvswitch"),
        (f.sockets > 1 and f.switch == "pcie" and f.socket_link is None,
         "sockets > 1 needs socket_link_bytes_per_s"),
    ]
    for bad, why in checks:
        if bad:
            raise FabricError(f"fabric: {why}")
