"""The fabric of a GPU node and its network, as a profile's ``fabric:`` block (keys, rail affinity
and what contradicts what: docs/predict.md, "Topology and profiles"). The vendor model
(:mod:`bench.costmodel.vendor`) prices on it; the schedule evaluator keeps its α/β per link
class. More ranks per node than devices is no contradiction for the evaluator (a flat ``1x4096``
is a valid what-if); the vendor model declines it."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

from bench.argtypes import CommbenchError

SWITCHES = ("nvswitch", "pcie")
GENERATIONS = ("volta", "ampere", "hopper", "blackwell")  # NCCL's tuning tables per generation
CPUS = ("intel", "amd", "arm")
NETWORKS = ("rail", "fat_tree")
DEFAULT_RING_EFFICIENCY = 1.0  # nominal: a preset states its measured fraction
DEFAULT_NIC_EFFICIENCY = 1.0
DEFAULT_CHANNELS_PER_NIC = 2  # channels = 2 per NIC unless stated (NCCL runs ~2 per NIC)
_KEYS = {"devices", "switch", "port_bytes_per_s", "ring_efficiency", "devices_per_switch",
         "switch_uplink_bytes_per_s", "sockets", "socket_link_bytes_per_s", "nics", "network",
         "nvls", "collnet", "channels", "generation", "cpu", "trays", "latency",
         "ll_bytes_per_s"}
_LATENCY = {"ll_base", "ll_nvlink_hop", "p2p_base_us", "p2p_peer_us"}
_NICS = {"count", "bytes_per_s", "efficiency"}
_NETWORK = {"kind", "rails"}


class FabricError(CommbenchError, ValueError):
    """Raised by :func:`parse_fabric`; the profile loader turns it into a ProfileError."""


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
    nvls: float | None = None  # achievable bytes/s per port per direction of in-switch reduction
    collnet: float | None = None  # achievable bytes/s per NIC of in-network reduction
    devices_per_switch: int | None = None  # pcie
    switch_uplink: float | None = None  # pcie
    sockets: int = 1
    socket_link: float | None = None  # pcie, sockets > 1
    generation: str = "hopper"  # which row of NCCL's tuning tables (vendor model)
    cpu: str = "intel"  # the host CPU: NCCL's LL cap and network overhead across nodes
    trays: int = 1  # an NVLink domain over several trays (NVL72: 72 devices, 18 trays)
    # NCCL's latency constants are Hopper-era: a fabric may scale LL's base and NVLink-hop
    # latencies, and state its point-to-point latency (us: fixed + per peer) and LL's ceiling
    ll_base: float = 1.0
    ll_nvlink_hop: float = 1.0
    p2p_base_us: float | None = None  # None: one Simple hop of the intra or network link
    p2p_peer_us: float = 1.0
    ll_cap: float | None = None  # bytes/s of bus bandwidth LL reaches (None: NCCL's llMaxBw)

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


def _num(where: str, key: str, value: Any, *, frac: bool = False) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0 or (frac and value > 1):
        want = "a number in (0, 1]" if frac else "a number > 0"
        raise FabricError(f"{where}: fabric.{key}: expected {want}, got {value!r}")
    return float(value)


def _int(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FabricError(f"{where}: fabric.{key}: expected an integer >= 1, got {value!r}")
    return value


def _block(where: str, raw: dict[str, Any], key: str, keys: set[str]) -> dict[str, Any]:
    got = raw.get(key) or {}
    if not isinstance(got, dict) or set(got) - keys:
        raise FabricError(f"{where}: fabric.{key}: expected keys among {', '.join(sorted(keys))}")
    return got


def parse_fabric(raw: Any, where: str, *, intra_beta: float | None, inter_beta: float | None,
                 nics_per_node: int) -> Fabric:
    """A validated :class:`Fabric` from a profile's ``fabric:`` mapping. Port and NIC bandwidth
    default to the profile's ``links.intra`` / ``links.inter`` β, the NIC count to
    ``nics_per_node`` (stating both differently is a contradiction)."""
    if not isinstance(raw, dict):
        raise FabricError(f"{where}: fabric: expected a mapping")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise FabricError(f"{where}: fabric: unknown key {unknown[0]!r} "
                          f"(valid: {', '.join(sorted(_KEYS))})")
    devices = _int(where, "devices", raw.get("devices"))
    switch = raw.get("switch")
    if switch not in SWITCHES:
        raise FabricError(f"{where}: fabric.switch: expected nvswitch or pcie, got {switch!r}")
    port = raw.get("port_bytes_per_s", intra_beta)
    if port is None:
        raise FabricError(f"{where}: fabric.port_bytes_per_s: needed (no links.intra either)")
    nics = _block(where, raw, "nics", _NICS)
    net = _block(where, raw, "network", _NETWORK)
    count = _int(where, "nics.count", nics.get("count", nics_per_node))
    if count != nics_per_node:
        raise FabricError(f"{where}: fabric.nics.count {count} contradicts nics_per_node "
                          f"{nics_per_node}")
    nic_bw = nics.get("bytes_per_s", inter_beta)
    if nic_bw is None:
        raise FabricError(f"{where}: fabric.nics.bytes_per_s: needed (no links.inter either)")
    kind = net.get("kind", "rail")
    if kind not in NETWORKS:
        raise FabricError(f"{where}: fabric.network.kind: expected rail or fat_tree, got {kind!r}")
    rails = _int(where, "network.rails", net.get("rails", count if kind == "rail" else 1))
    pcie = {k: raw[k] for k in ("devices_per_switch", "switch_uplink_bytes_per_s", "sockets",
                                "socket_link_bytes_per_s") if k in raw}
    generation, cpu = raw.get("generation", "hopper"), raw.get("cpu", "intel")
    if generation not in GENERATIONS:
        raise FabricError(f"{where}: fabric.generation: expected one of {', '.join(GENERATIONS)}, "
                          f"got {generation!r}")
    if cpu not in CPUS:
        raise FabricError(f"{where}: fabric.cpu: expected one of {', '.join(CPUS)}, got {cpu!r}")
    lat = _block(where, raw, "latency", _LATENCY)
    fab = Fabric(
        ll_base=_num(where, "latency.ll_base", lat.get("ll_base", 1.0)),
        ll_nvlink_hop=_num(where, "latency.ll_nvlink_hop", lat.get("ll_nvlink_hop", 1.0)),
        p2p_base_us=(None if lat.get("p2p_base_us") is None
                     else _num(where, "latency.p2p_base_us", lat["p2p_base_us"])),
        p2p_peer_us=_num(where, "latency.p2p_peer_us", lat.get("p2p_peer_us", 1.0)),
        ll_cap=(None if raw.get("ll_bytes_per_s") is None
                else _num(where, "ll_bytes_per_s", raw["ll_bytes_per_s"])),
        generation=generation, cpu=cpu, trays=_int(where, "trays", raw.get("trays", 1)),
        devices=devices, switch=switch, port=_num(where, "port_bytes_per_s", port),
        ring_efficiency=_num(where, "ring_efficiency",
                             raw.get("ring_efficiency", DEFAULT_RING_EFFICIENCY), frac=True),
        nics=count, nic_bw=_num(where, "nics.bytes_per_s", nic_bw),
        nic_efficiency=_num(where, "nics.efficiency",
                            nics.get("efficiency", DEFAULT_NIC_EFFICIENCY), frac=True),
        network=kind, rails=rails,
        channels=_int(where, "channels", raw.get("channels", DEFAULT_CHANNELS_PER_NIC * count)),
        nvls=(None if raw.get("nvls") is None
              else _num(where, "nvls", _one(where, "nvls", raw["nvls"]))),
        collnet=(None if raw.get("collnet") is None
                 else _num(where, "collnet", _one(where, "collnet", raw["collnet"]))),
        devices_per_switch=(None if "devices_per_switch" not in pcie
                            else _int(where, "devices_per_switch", pcie["devices_per_switch"])),
        switch_uplink=(None if "switch_uplink_bytes_per_s" not in pcie else _num(
            where, "switch_uplink_bytes_per_s", pcie["switch_uplink_bytes_per_s"])),
        sockets=_int(where, "sockets", pcie.get("sockets", 1)),
        socket_link=(None if "socket_link_bytes_per_s" not in pcie else _num(
            where, "socket_link_bytes_per_s", pcie["socket_link_bytes_per_s"])))
    _contradictions(fab, where, set(pcie))
    return fab


def _one(where: str, key: str, raw: Any) -> Any:
    if not isinstance(raw, dict) or set(raw) != {"bytes_per_s"}:
        raise FabricError(f"{where}: fabric.{key}: expected {{bytes_per_s: B}} (its achievable "
                          "bandwidth)")
    return raw["bytes_per_s"]


def _contradictions(f: Fabric, where: str, pcie_keys: set[str]) -> None:
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
            raise FabricError(f"{where}: fabric: {why}")
