"""Profiles: what the links, the reduction and the device cost, as YAML files. Keys and units:
docs/predict.md ("Topology and profiles", "Calibration"); ``fabric``:
:mod:`bench.costmodel.fabric`; ``slow`` injects faults for emulation only (:mod:`bench.emulate`;
the cost model ignores it). Presets ship as ``bench/costmodel/profiles/NAME.yaml``; wherever a
profile is accepted, a NAME or a path works."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, Strict, ValidationError, model_validator

from bench.argtypes import CommbenchError
from bench.costmodel.fabric import Fabric, FabricError, FabricSpec
from bench.costmodel.fields import Count, Index, NonNegative, Positive
from bench.scenario_base import Frozen, one_line

PRESETS = Path(__file__).parent / "profiles"
MPI_KEYS = {"eager_limit_bytes": "eager_limit", "rendezvous_s": "rendezvous",
            "eager_s_per_byte": "eager_per_byte"}  # YAML key -> Mpi field


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


class _Link(Frozen):
    alpha_s: NonNegative
    beta_bytes_per_s: Positive  # per direction


class _Links(Frozen):
    intra: _Link | None = None
    inter: _Link | None = None
    spine: _Link | None = None

    @model_validator(mode="after")
    def _some(self) -> _Links:
        if not self.model_fields_set:
            raise ValueError("expected a mapping of link classes (intra, inter, spine)")
        return self


class _Mpi(Frozen):
    eager_limit_bytes: NonNegative
    rendezvous_s: NonNegative = 0.0
    eager_s_per_byte: NonNegative = 0.0


class _Slow(Frozen):
    factor: Annotated[Positive, Field(ge=1)]  # a slow part: its links take factor times longer
    node: Index | None = None
    link: tuple[Index, Index] | None = None

    @model_validator(mode="after")
    def _one_place(self) -> _Slow:
        if (self.node is None) == (self.link is None):
            raise ValueError("expected {node: N, factor: F} or {link: [A, B], factor: F}")
        if self.link is not None and self.link[0] == self.link[1]:
            raise ValueError("link: expected two different ranks >= 0")
        return self


Flag = Annotated[bool, Strict()]
_Curve = Annotated[list[Annotated[list[Positive], Field(min_length=2, max_length=2)]],
                   Field(min_length=1)]  # [[bytes, bytes/s], ...], sizes increasing
_Points = list[Annotated[list[Positive], Field(min_length=5, max_length=5)]]


class _Device(Frozen):
    """``device:``: what advise prices compute and memory with (docs/advise.md); every key
    optional, so a consumer states its own default."""

    name: str | None = None
    attention: str | None = None
    compute_source: str | None = None
    elementwise: str | None = None
    pipeline_balance: str | None = None
    gemm_tiles: str | None = None
    overlaps_communication: Flag | None = None
    vocab_parallel: Flag | None = None
    sequence_parallel: Flag | None = None
    fused_qkv: Flag | None = None
    autograd_accumulation: Flag | None = None
    fp32_loss: Flag | None = None
    dropout: Flag | None = None
    deallocates_outputs: Flag | None = None
    context_parallel: Flag | None = None
    pipeline_scatter_gather: Flag | None = None
    memory_bytes: NonNegative | None = None
    memory_bandwidth_bytes_per_s: NonNegative | None = None
    flops_per_s: NonNegative | None = None
    flops_16bit_per_s: NonNegative | None = None
    gemm_efficiency: NonNegative | None = None
    gemm_latency_s: NonNegative | None = None
    memory_efficiency: NonNegative | None = None
    sm_count: NonNegative | None = None
    gemm_tile_reuse: NonNegative | None = None
    microbatch_overhead_s: NonNegative | None = None
    gemm_sustained: NonNegative | None = None
    copy_bandwidth_curve: _Curve | None = None
    gemm_points: _Points | None = None  # [[m, n, k, batch, seconds], ...] as commbench gemm timed

    @model_validator(mode="after")
    def _stated(self) -> _Device:
        if null := sorted(k for k in self.model_fields_set if getattr(self, k) is None):
            raise ValueError(f"{null[0]}: expected a value, got null")
        curve = self.copy_bandwidth_curve or []
        if any(a[0] >= b[0] for a, b in itertools.pairwise(curve)):
            raise ValueError("copy_bandwidth_curve: sizes must increase")
        return self


class ProfileSpec(Frozen):
    """A profile file as written (keys and units: docs/predict.md); :func:`from_mapping` turns
    it into a :class:`Profile`."""

    name: str | None = None  # None: the file's stem
    source: str = ""
    overhead_s: NonNegative = 0.0
    gamma_s_per_byte: NonNegative = 0.0
    hot_send_s_per_byte: NonNegative = 0.0
    nics_per_node: Count = 1
    links: _Links
    device: _Device | None = None
    native: dict[str, Any] | None = None
    fitted: dict[str, Any] | None = None
    slow: list[_Slow] | None = None
    fabric: FabricSpec | None = None
    mpi: _Mpi | None = None


def from_mapping(raw: Any, where: str) -> Profile:
    """Validate a parsed YAML document; ``where`` names it in errors."""
    try:
        spec = ProfileSpec.model_validate(raw)
    except ValidationError as e:
        raise ProfileError(f"{where}: {one_line(e, ProfileSpec)}") from None
    links = {c: Link(v.alpha_s, v.beta_bytes_per_s) for c in raw["links"]  # as written, in order
             if (v := getattr(spec.links, c)) is not None}
    fabric = None
    if spec.fabric is not None:
        try:
            fabric = spec.fabric.fabric(
                intra_beta=links["intra"].beta if "intra" in links else None,
                inter_beta=links["inter"].beta if "inter" in links else None,
                nics_per_node=spec.nics_per_node)
        except FabricError as e:
            raise ProfileError(f"{where}: {e}") from None
    device = spec.device.model_dump(exclude_unset=True) if spec.device else {}
    mpi = spec.mpi
    return Profile(name=spec.name or Path(where).stem, path=where, source=spec.source,
                   links=links, gamma=spec.gamma_s_per_byte, overhead=spec.overhead_s,
                   hot=spec.hot_send_s_per_byte, nics_per_node=spec.nics_per_node,
                   device={k: device[k] for k in raw["device"]} if device else {},
                   native=dict(spec.native or {}), fitted=spec.fitted,
                   slow=tuple(Slow(x.factor, node=x.node, link=x.link) for x in spec.slow or ()),
                   fabric=fabric, fabric_yaml=dict(raw["fabric"]) if fabric else {},
                   mpi=Mpi(mpi.eager_limit_bytes, mpi.rendezvous_s, mpi.eager_s_per_byte)
                   if mpi else None)


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
