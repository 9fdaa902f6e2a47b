"""Profiles: what the links, the reduction and the device cost, as YAML files. Keys and units:
docs/predict.md ("Topology and profiles", "Calibration"); ``fabric``:
:mod:`bench.costmodel.fabric`; ``slow`` injects faults for emulation only (:mod:`bench.emulate`;
the cost model ignores it). Presets ship as ``bench/costmodel/profiles/NAME.yaml``; wherever a
profile is accepted, a NAME or a path works."""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.argtypes import CommbenchError
from bench.costmodel.fabric import Fabric, FabricError, parse_fabric

PRESETS = Path(__file__).parent / "profiles"
LINK_CLASSES = ("intra", "inter", "spine")
_TOP = {"name", "source", "overhead_s", "gamma_s_per_byte", "hot_send_s_per_byte", "nics_per_node",
        "links", "device", "native", "fitted", "slow", "fabric", "mpi"}
MPI_KEYS = {"eager_limit_bytes": "eager_limit", "rendezvous_s": "rendezvous",
            "eager_s_per_byte": "eager_per_byte"}  # YAML key -> Mpi field
_DEVICE_TEXT = {"name", "attention", "compute_source", "elementwise", "pipeline_balance",
                "gemm_tiles"}
_DEVICE_FLAGS = {"overlaps_communication", "vocab_parallel", "sequence_parallel", "fused_qkv",
                 "autograd_accumulation", "fp32_loss", "dropout", "deallocates_outputs",
                 "context_parallel", "pipeline_scatter_gather"}
_DEVICE = _DEVICE_TEXT | _DEVICE_FLAGS | {
    "memory_bytes", "memory_bandwidth_bytes_per_s", "flops_per_s", "flops_16bit_per_s",
    "gemm_efficiency", "gemm_latency_s", "memory_efficiency", "copy_bandwidth_curve", "gemm_points",
    "sm_count", "gemm_tile_reuse", "microbatch_overhead_s", "gemm_sustained"}


class ProfileError(CommbenchError, ValueError):
    """A profile that cannot be used; one line naming the file and the key."""


@dataclass(frozen=True)
class Link:
    alpha: float  # s
    beta: float  # bytes/s, per direction


@dataclass(frozen=True)
class Mpi:
    """An MPI's eager/rendezvous switch: messages above ``eager_limit`` bytes pay
    ``rendezvous`` seconds more, the others ``eager_per_byte`` seconds per byte more."""

    eager_limit: float
    rendezvous: float = 0.0
    eager_per_byte: float = 0.0

    def as_yaml(self) -> dict[str, float]:
        return {k: getattr(self, a) for k, a in MPI_KEYS.items()}


@dataclass(frozen=True)
class Slow:
    """One slow node (``node``) or link between two ranks (``link``): its messages take
    ``factor`` times their modelled link time (emulation only)."""

    factor: float
    node: int | None = None
    link: tuple[int, int] | None = None

    def as_yaml(self) -> dict[str, Any]:
        where = {"node": self.node} if self.link is None else {"link": list(self.link)}
        return {**where, "factor": self.factor}


@dataclass(frozen=True)
class Profile:
    name: str
    path: str  # the file it was read from ("" when built in code)
    source: str  # where the figures come from
    links: dict[str, Link]
    gamma: float = 0.0  # s per reduced byte
    overhead: float = 0.0  # o: s per message, paid in posting order by the sender
    hot: float = 0.0  # s per sent byte the sender wrote earlier in the same call
    nics_per_node: int = 1
    device: dict[str, Any] = field(default_factory=dict)
    native: dict[str, Any] = field(default_factory=dict)  # collective -> measured/model curve
    fitted: dict[str, Any] | None = None
    slow: tuple[Slow, ...] = ()  # faults for emulation; the cost model ignores them
    fabric: Fabric | None = None  # the node and network as built (bench.costmodel.fabric)
    fabric_yaml: dict[str, Any] = field(default_factory=dict)  # as written, for as_yaml
    mpi: Mpi | None = None  # eager/rendezvous switch; None: off

    def link(self, cls: str) -> Link:
        try:
            return self.links[cls]
        except KeyError:
            raise ProfileError(f"{self.path or self.name}: no link class '{cls}' in links "
                               f"(the topology uses it; has: {', '.join(self.links) or 'none'})"
                               ) from None

    @property
    def copy_bandwidth(self) -> float | None:
        bw = self.device.get("memory_bandwidth_bytes_per_s")
        return float(bw) if bw else None

    def provenance(self) -> dict[str, Any]:
        """What records say about the profile: its name, file and source."""
        return {"name": self.name, "path": self.path, "source": self.source,
                "fitted": bool(self.fitted)}

    def as_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source,
                               "overhead_s": self.overhead, "gamma_s_per_byte": self.gamma,
                               **({"hot_send_s_per_byte": self.hot} if self.hot else {}),
                               "nics_per_node": self.nics_per_node,
                               "links": {k: {"alpha_s": v.alpha, "beta_bytes_per_s": v.beta}
                                         for k, v in self.links.items()}}
        optional = {"device": dict(self.device), "native": self.native, "fitted": self.fitted,
                    "slow": [x.as_yaml() for x in self.slow], "fabric": self.fabric_yaml,
                    "mpi": self.mpi.as_yaml() if self.mpi else None}
        return out | {k: v for k, v in optional.items() if v}


def _num(where: str, key: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, str):  # YAML 1.1 reads 4.5e11 (no dot-sign form) as a string
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"{where}: {key}: expected a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ProfileError(f"{where}: {key}: must be {'> 0' if positive else '>= 0'}, got {value}")
    return float(value)


def _points(where: str, raw: Any) -> list[list[float]]:
    """``device.gemm_points``: [[m, n, k, batch, seconds], ...] as ``commbench gemm`` timed them."""
    if not isinstance(raw, list) or not all(isinstance(r, list) and len(r) == 5 for r in raw):
        raise ProfileError(f"{where}: device.gemm_points: expected [[m, n, k, batch, seconds], ...]")
    return [[_num(where, "device.gemm_points", x, positive=True) for x in r] for r in raw]


def _curve(where: str, raw: Any) -> list[list[float]]:
    """``device.copy_bandwidth_curve``: [[bytes, bytes/s], ...], sizes increasing."""
    key = "device.copy_bandwidth_curve"
    if not isinstance(raw, list) or not raw or not all(
            isinstance(x, (list, tuple)) and len(x) == 2 for x in raw):
        raise ProfileError(f"{where}: {key}: expected a list of [bytes, bytes_per_s] pairs")
    out = [[_num(where, key, n, positive=True), _num(where, key, bw, positive=True)]
           for n, bw in raw]
    if any(a[0] >= b[0] for a, b in itertools.pairwise(out)):
        raise ProfileError(f"{where}: {key}: sizes must increase")
    return out


def _slow(where: str, raw: Any) -> tuple[Slow, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ProfileError(f"{where}: slow: expected a list of {{node: N, factor: F}} or "
                           f"{{link: [A, B], factor: F}}")
    out = []
    for i, x in enumerate(raw):
        key = f"slow[{i}]"
        if not isinstance(x, dict) or set(x) not in ({"node", "factor"}, {"link", "factor"}):
            raise ProfileError(f"{where}: {key}: expected {{node: N, factor: F}} or "
                               f"{{link: [A, B], factor: F}}")
        factor = _num(where, f"{key}.factor", x["factor"], positive=True)
        if factor < 1:
            raise ProfileError(f"{where}: {key}.factor: must be >= 1 (a slow part), got {factor}")
        ids = [x["node"]] if "node" in x else x["link"]
        if (not isinstance(ids, list) or len(ids) != (1 if "node" in x else 2)
                or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in ids)
                or len(set(ids)) != len(ids)):
            what = "a node index >= 0" if "node" in x else "two different ranks >= 0"
            raise ProfileError(f"{where}: {key}: expected {what}")
        out.append(Slow(factor, node=ids[0]) if "node" in x else Slow(factor, link=(ids[0], ids[1])))
    return tuple(out)


def from_mapping(raw: Any, where: str) -> Profile:
    """Validate a parsed YAML document; ``where`` names it in errors."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: expected a mapping of profile keys")
    unknown = sorted(set(raw) - _TOP)
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r} (valid: {', '.join(sorted(_TOP))})")
    links_raw = raw.get("links")
    if not isinstance(links_raw, dict) or not links_raw:
        raise ProfileError(f"{where}: links: expected a mapping of link classes (intra, inter, spine)")
    links = {}
    for cls, v in links_raw.items():
        if cls not in LINK_CLASSES:
            raise ProfileError(f"{where}: links: unknown class {cls!r} (valid: intra, inter, spine)")
        if not isinstance(v, dict) or set(v) != {"alpha_s", "beta_bytes_per_s"}:
            raise ProfileError(f"{where}: links.{cls}: expected alpha_s and beta_bytes_per_s")
        links[cls] = Link(_num(where, f"links.{cls}.alpha_s", v["alpha_s"]),
                          _num(where, f"links.{cls}.beta_bytes_per_s", v["beta_bytes_per_s"],
                               positive=True))
    device = dict(raw.get("device") or {})
    if not isinstance(device, dict) or set(device) - _DEVICE:
        raise ProfileError(f"{where}: device: expected keys among {', '.join(sorted(_DEVICE))}")
    for k, v in device.items():
        if k == "copy_bandwidth_curve":
            device[k] = _curve(where, v)
        elif k in _DEVICE_FLAGS:
            if not isinstance(v, bool):
                raise ProfileError(f"{where}: device.{k}: expected true or false, got {v!r}")
        elif k == "gemm_points":
            device[k] = _points(where, v)
        elif k not in _DEVICE_TEXT:
            device[k] = _num(where, f"device.{k}", v)
    nics = raw.get("nics_per_node", 1)
    if isinstance(nics, bool) or not isinstance(nics, int) or nics < 1:
        raise ProfileError(f"{where}: nics_per_node: expected an integer >= 1, got {nics!r}")
    fabric = None
    if raw.get("fabric") is not None:
        try:
            fabric = parse_fabric(raw["fabric"], where,
                                  intra_beta=links["intra"].beta if "intra" in links else None,
                                  inter_beta=links["inter"].beta if "inter" in links else None,
                                  nics_per_node=nics)
        except FabricError as e:
            raise ProfileError(str(e)) from None
    return Profile(name=str(raw.get("name") or Path(where).stem), path=where,
                   source=str(raw.get("source", "")), links=links,
                   gamma=_num(where, "gamma_s_per_byte", raw.get("gamma_s_per_byte", 0.0)),
                   overhead=_num(where, "overhead_s", raw.get("overhead_s", 0.0)),
                   hot=_num(where, "hot_send_s_per_byte", raw.get("hot_send_s_per_byte", 0.0)),
                   nics_per_node=nics, device=dict(device),
                   native=dict(raw.get("native") or {}), fitted=raw.get("fitted"),
                   slow=_slow(where, raw.get("slow")), fabric=fabric,
                   fabric_yaml=dict(raw["fabric"]) if fabric else {},
                   mpi=_mpi(where, raw.get("mpi")))


def _mpi(where: str, raw: Any) -> Mpi | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or "eager_limit_bytes" not in raw or set(raw) - set(MPI_KEYS):
        raise ProfileError(f"{where}: mpi: expected eager_limit_bytes and optionally "
                           "rendezvous_s, eager_s_per_byte")
    return Mpi(**{a: _num(where, f"mpi.{k}", raw.get(k, 0.0)) for k, a in MPI_KEYS.items()})


def presets() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.yaml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """A preset by NAME or a YAML file by path; ProfileError (one line) otherwise."""
    text = str(name_or_path)
    path = Path(text)
    if not path.is_file() and "/" not in text and not text.endswith((".yaml", ".yml")):
        path = PRESETS / f"{text}.yaml"
        if not path.is_file():
            raise ProfileError(f"unknown profile {text!r}: not a file, and the presets are "
                               f"{', '.join(presets())}")
    if not path.is_file():
        raise ProfileError(f"{text}: no such profile file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ProfileError(f"{path}: not valid YAML{at}") from None
    return from_mapping(raw, str(path))


def save_profile(profile: Profile, path: Path, header: str = "") -> None:
    text = yaml.safe_dump(profile.as_yaml(), sort_keys=False, default_flow_style=None, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + text, encoding="utf-8")
