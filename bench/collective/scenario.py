"""Collective scenarios: typed, frozen, validated descriptions of a sweep, loaded from YAML; every
mistake is one line naming the file and the key. Collectives and algorithms come from the
registries: nothing here names one."""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from bench.collective import variants as var
from bench.collective import vendor_settings
from bench.collective.variants import Item, Variant
from bench.emulate.config import Emulate
from bench.measure.case import Timing
from bench.measure.floors import Floor
from bench.scenario_base import (
    Frozen,
    PositiveInt,
    Scenario,  # the loader, for this kind's readers
    ScenarioError,
    load_scenario,
    parse_scenario,
)
from bench.units import MAX_SIZES, parse_size, size_range
from kernels import collective as coll
from kernels.algorithm import VENDOR, algorithm_names
from kernels.ops import HOST_DTYPE, ITEMSIZE, OPS
from kernels.registry import UnknownName
from kernels.transports import TRANSPORTS

__all__ = ["CollectiveScenario", "ScenarioError", "load_scenario", "parse_scenario"]

Size = Annotated[int, BeforeValidator(parse_size)]
ALL = "all"


class SizeSweep(Frozen):
    """nccl-tests' ``-b min -e max -f factor``."""

    min: Size
    max: Size
    factor: Annotated[float, Field(gt=1)] = 2.0

    @model_validator(mode="after")
    def _order(self) -> SizeSweep:
        if self.max < self.min:
            raise ValueError(f"max ({self.max} B) is below min ({self.min} B)")
        n = math.floor(math.log(self.max / self.min) / math.log(self.factor)) + 1
        if n > MAX_SIZES:
            raise ValueError(f"factor {self.factor:g} makes {n} sizes from {self.min} B to "
                             f"{self.max} B; at most {MAX_SIZES} (use a larger factor)")
        return self

    def expand(self) -> list[int]:
        return size_range(self.min, self.max, self.factor)


def _names(kind: str, valid: list[str]) -> Any:
    def check(values: list[str]) -> list[str]:
        for v in values:
            if v not in valid:
                raise ValueError(f"unknown {kind} {v!r}; valid: {', '.join(valid)}")
        if len(set(values)) != len(values):
            raise ValueError(f"{kind} listed twice")
        return values

    return check


def _canonical(name: Any) -> str:
    if not isinstance(name, str):
        raise ValueError(f"a collective is a name, got {name!r}")
    try:
        return coll.resolve(name).key
    except UnknownName as e:
        raise ValueError(str(e)) from None


Items = Annotated[list[Item], Field(min_length=1)]  # names and variants (bench/collective/variants.py)
Algorithms = Annotated[
    Annotated[Literal["all"], Tag("all")]
    | Annotated[Items, Tag("list")]
    | Annotated[dict[str, Literal["all"] | Items], Tag("mapping")],
    Discriminator(lambda v: "all" if isinstance(v, str) else "mapping" if isinstance(v, dict)
                  else "list"),
]


class CollectiveScenario(Scenario):
    name: str
    description: str = ""
    kind: Literal["collective"] = "collective"
    collective: str | None = None  # the single-collective form (``allreduce`` still works)
    collectives: Annotated[list[str], Field(min_length=1)] = Field(default=["all_reduce"])
    transports: Annotated[list[str], Field(min_length=1)] = Field(default=["mpi"])
    world_sizes: list[PositiveInt] = Field(default=[])  # empty: the launcher's world size
    ranks_per_node: Annotated[list[PositiveInt | Literal["auto"]], Field(min_length=1)] = Field(
        default=["auto"])
    sizes: Annotated[
        Annotated[Annotated[list[Size], Field(min_length=1)], Tag("list")]
        | Annotated[SizeSweep, Tag("sweep")],
        Discriminator(lambda v: "sweep" if isinstance(v, dict | SizeSweep) else "list"),
        BeforeValidator(lambda v: [v] if isinstance(v, str | int) else v),
    ]
    algorithms: Algorithms = ALL
    root: Annotated[int, Field(ge=0)] = 0  # of rooted collectives (broadcast, reduce)
    dtypes: Annotated[list[str], Field(min_length=1)] = Field(default=["float32"])
    ops: Annotated[list[str], Field(min_length=1)] | None = None  # default [sum]
    timing: Timing = Timing()
    hugepages: Annotated[Literal["off", "on", "auto"], BeforeValidator(
        lambda v: {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v)] = "off"
    # host buffers (mpi): see kernels/transports/hostmem.py; YAML reads a bare off/on as a bool
    thread_level: Literal["auto", "single", "funneled", "serialized", "multiple"] = "auto"
    check: bool = True
    case_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    emulate: Emulate | None = None  # a modelled cluster on this host (bench/emulate/config.py)
    expect: list[Floor] = Field(default=[])  # floors a case must reach (bench/measure/floors.py)

    _tr = field_validator("transports")(_names("transport", TRANSPORTS.names()))
    _dt = field_validator("dtypes")(_names("dtype", list(HOST_DTYPE)))
    _op = field_validator("ops")(lambda v: v if v is None else _names("op", list(OPS))(v))

    @field_validator("collectives", mode="before")
    @classmethod
    def _collectives(cls, v: Any) -> Any:
        if v == ALL:
            return coll.names()
        if not isinstance(v, list):
            return v
        out = [_canonical(x) for x in v]
        if len(set(out)) != len(out):
            raise ValueError("a collective listed twice (aliases count as the same collective)")
        return out

    @field_validator("algorithms", mode="before")
    @classmethod
    def _mapping_keys(cls, v: Any) -> Any:
        if isinstance(v, dict):
            out = {_canonical(k): names for k, names in v.items()}
            if len(out) != len(v):
                raise ValueError("a collective given twice (aliases count as the same collective)")
            return out
        return v

    @model_validator(mode="before")
    @classmethod
    def _single(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and raw.get("collective") is not None:
            if "collectives" in raw:
                raise ValueError("collective: give either collective or collectives, not both")
            raw = {**raw, "collectives": [raw["collective"]], "collective": None}
        return raw

    @field_validator("world_sizes")
    @classmethod
    def _unique_worlds(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError(f"a world size listed twice: {v}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> CollectiveScenario:
        self._check_algorithms()
        self._check_ops()
        if self.emulate is not None:
            self.emulate.check(self.world_sizes, self.transports,
                               "ranks_per_node" in self.model_fields_set)
        for w, rpn in itertools.product(self.world_sizes, self.ranks_per_node):
            if rpn != "auto" and w % rpn:
                raise ValueError(f"ranks_per_node: {rpn} does not divide world size {w}")
        if any(coll.resolve(c).rooted for c in self.collectives):
            for w in self.world_sizes:
                if self.root >= w:
                    raise ValueError(f"root: {self.root} is outside world size {w}")
        for t, d in itertools.product(self.transports, self.dtypes):
            if d not in TRANSPORTS.get(t).dtypes:
                able = [n for n in TRANSPORTS.names() if d in TRANSPORTS.get(n).dtypes]
                raise ValueError(f"dtypes: {d} is not supported by transport {t}; "
                                 f"{d} runs on {', '.join(able)}")
        smallest = min(ITEMSIZE[d] for d in self.dtypes)
        for n in self.byte_sizes():
            if n < smallest:
                raise ValueError(f"sizes: {n} B is smaller than one element of the dtypes")
        return self

    def _check_algorithms(self) -> None:
        a = self.algorithms
        if isinstance(a, dict):
            for c, items in a.items():
                if c not in self.collectives:
                    raise ValueError(f"algorithms: {c} is not one of the scenario's collectives "
                                     f"({', '.join(self.collectives)})")
                if items != ALL:
                    names = [i for i in items if isinstance(i, str)]
                    try:
                        _names(f"{c} algorithm", algorithm_names(c))(names)
                        _names(f"{c} algorithm", [*algorithm_names(c), *var.names_of(items)])(
                            var.names_of(items))
                    except ValueError as e:
                        raise ValueError(f"algorithms.{c}: {e}") from None
        elif a != ALL:
            known = {n for c in self.collectives for n in algorithm_names(c)}
            for n in (i for i in a if isinstance(i, str)):
                if n not in known:
                    valid = ", ".join(f"{c}: {' '.join(algorithm_names(c))}" for c in self.collectives)
                    raise ValueError(f"algorithms: unknown algorithm {n!r} for "
                                     f"{', '.join(self.collectives)}; valid: {valid}")
            if len(set(var.names_of(a))) != len(a):
                raise ValueError("algorithms: an algorithm listed twice")
        self._check_variants()

    def _check_variants(self) -> None:
        """Each variant: a name of its own, a vendor call of its collectives, and some
        (collective, transport) of the scenario where its settings can matter."""
        lists = self._lists()
        try:
            found = var.collect(list(lists.values()))
        except ValueError as e:
            raise ValueError(f"algorithms: {e}") from None
        if found and self.emulate is not None:
            raise ValueError(f"algorithms: variant {next(iter(found))!r} is a vendor call, which an "
                             "emulated run leaves out (its messages cannot be delayed)")
        for v in found.values():
            mine = [coll.resolve(c) for c, items in lists.items() if v in items]
            taken = [c.name for c in mine if v.name in algorithm_names(c.name)]
            if taken:
                raise ValueError(f"algorithms: variant {v.name!r} is the name of a {taken[0]} "
                                 "algorithm; give it a name of its own")
            if not any(v.of in algorithm_names(c.name) for c in mine):
                raise ValueError(f"algorithms: variant {v.name!r}: {v.of} is not an algorithm of "
                                 f"{', '.join(c.name for c in mine)}")
            why = [r for c in mine for t in self.transports
                   if (r := var_refusal(v, c, t)) is not None]
            if len(why) == len(mine) * len(self.transports):
                raise ValueError(f"algorithms: variant {v.name!r}: {why[0]}")

    def _lists(self) -> dict[str, list[Item]]:
        """Each collective's own list of algorithms (none where it runs them all)."""
        a = self.algorithms
        if isinstance(a, dict):
            return {c: v for c, v in a.items() if v != ALL}
        return {c: a for c in self.collectives} if a != ALL else {}

    def variants(self) -> dict[str, Variant]:
        """The scenario's variants by name (checked at load: one meaning per name)."""
        return var.collect(list(self._lists().values()))

    def _check_ops(self) -> None:
        if self.ops is not None and not any(coll.resolve(c).reduces for c in self.collectives):
            raise ValueError(f"ops: {', '.join(self.collectives)} do not reduce (op none); "
                             f"leave ops out")

    def algorithms_for(self, collective: str) -> tuple[str, ...]:
        """The algorithms this scenario runs for ``collective`` (native first when listed)."""
        c = coll.resolve(collective)
        chosen = self._lists().get(c.key)
        valid = algorithm_names(c.name)
        if chosen is None:
            return tuple(valid)
        return tuple(n.name if isinstance(n, Variant) else n for n in chosen
                     if (n.of if isinstance(n, Variant) else n) in valid)

    def ops_for(self, collective: str) -> tuple[str, ...]:
        """The ops ``collective`` runs with: the scenario's (default sum), or ``none``."""
        if not coll.resolve(collective).reduces:
            return ("none",)
        return tuple(self.ops or ["sum"])

    def byte_sizes(self) -> list[int]:
        return self.sizes.expand() if isinstance(self.sizes, SizeSweep) else list(self.sizes)

    def max_bytes_per_rank(self) -> int:
        """Host memory one rank needs at the largest size, over collectives and dtypes: see
        :func:`bench.collective.memory.rank_bytes` (workspace, scratch, input, check slices)."""
        from bench.collective.memory import rank_bytes

        n = max(self.byte_sizes())
        p = max(self.world_sizes or [2])
        return max(rank_bytes(coll.resolve(c), n // ITEMSIZE[d], ITEMSIZE[d], p)
                   for c in self.collectives for d in self.dtypes)


def var_refusal(v: Variant, spec: coll.Collective, transport: str) -> str | None:
    """Why variant ``v`` cannot mean anything for ``spec`` on ``transport``, or None."""
    if v.of not in algorithm_names(spec.name):
        return f"{spec.name} has no {v.of}"
    fam = TRANSPORTS.get(transport).family
    if fam not in (spec.vendor_inplace if v.of != VENDOR else spec.vendor):
        return f"{spec.name} declares no {fam} vendor call for {v.of}"
    why = vendor_settings.refusal(v.env, spec, fam)
    return f"{why} (transport {transport})" if why else None


def check_library(scenario: CollectiveScenario, source: str, family: str, library: str) -> None:
    """Refuse, before launching, a variant whose settings the MPI at hand does not read (an MPICH
    CVAR under Open MPI), where it would run on an MPI transport."""
    mpi = [t for t in scenario.transports if TRANSPORTS.get(t).family == "mpi"]
    for v in scenario.variants().values():
        runs = any(var_refusal(v, coll.resolve(c), t) is None
                   for c in scenario.collectives if v.name in scenario.algorithms_for(c) for t in mpi)
        why = vendor_settings.library_refusal(v.env, family, library) if runs else None
        if why is not None:
            raise ScenarioError(f"{source}: algorithms: variant {v.name!r}: {why}")


def check_memory(scenario: CollectiveScenario, source: str, ranks_on_host: int,
                 available: int) -> None:
    """Fail before launching when the largest size cannot fit in this host's free memory."""
    need = scenario.max_bytes_per_rank() * ranks_on_host
    if need > available:
        raise ScenarioError(
            f"{source}: sizes: {max(scenario.byte_sizes())} B needs about {need / 2**30:.1f} GiB "
            f"for {ranks_on_host} ranks on this host; {available / 2**30:.1f} GiB is available"
        )
