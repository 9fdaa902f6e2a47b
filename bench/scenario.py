"""Scenarios: typed, frozen, validated descriptions of a sweep, loaded from YAML.

Every mistake is caught at load time and reported as one line naming the file and the key.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

import kernels.algorithms  # noqa: F401 - registers the built-in algorithms
from bench.units import parse_size, size_range
from kernels.algorithm import ALGORITHMS
from kernels.ops import HOST_DTYPE, ITEMSIZE, OPS
from kernels.transports import TRANSPORTS


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class ScenarioError(ValueError):
    """A scenario that cannot run; ``str()`` is the one line shown to the user."""


Size = Annotated[int, BeforeValidator(parse_size)]
PositiveInt = Annotated[int, Field(ge=1)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class SizeSweep(Frozen):
    """nccl-tests' ``-b min -e max -f factor``."""

    min: Size
    max: Size
    factor: Annotated[float, Field(gt=1)] = 2.0

    @model_validator(mode="after")
    def _order(self) -> SizeSweep:
        if self.max < self.min:
            raise ValueError(f"max ({self.max} B) is below min ({self.min} B)")
        return self

    def expand(self) -> list[int]:
        return size_range(self.min, self.max, self.factor)


class Timing(Frozen):
    warmup: Annotated[int, Field(ge=0)] = 3
    iters: PositiveInt | None = None  # explicit override of the time budget
    time_budget_ms: Annotated[float, Field(gt=0)] = 100.0  # timed iterations per case, all reps
    min_iters: PositiveInt = 5
    max_iters: PositiveInt = 10_000
    repetitions: PositiveInt = 2  # blocks per case, algorithms alternating order between blocks

    @model_validator(mode="after")
    def _bounds(self) -> Timing:
        if self.max_iters < self.min_iters:
            raise ValueError("max_iters is below min_iters")
        return self


def _names(kind: str, valid: list[str]) -> Any:
    def check(values: list[str]) -> list[str]:
        for v in values:
            if v not in valid:
                raise ValueError(f"unknown {kind} {v!r}; valid: {', '.join(valid)}")
        if len(set(values)) != len(values):
            raise ValueError(f"{kind} listed twice")
        return values

    return check


class CollectiveScenario(Frozen):
    name: str
    description: str = ""
    kind: Literal["collective"] = "collective"
    collective: Literal["allreduce"] = "allreduce"
    transports: Annotated[list[str], Field(min_length=1)] = ["mpi"]
    world_sizes: list[PositiveInt] = []  # empty: the launcher's world size
    ranks_per_node: Annotated[list[PositiveInt | Literal["auto"]], Field(min_length=1)] = ["auto"]
    sizes: Annotated[
        Annotated[Annotated[list[Size], Field(min_length=1)], Tag("list")]
        | Annotated[SizeSweep, Tag("sweep")],
        Discriminator(lambda v: "sweep" if isinstance(v, dict | SizeSweep) else "list"),
        BeforeValidator(lambda v: [v] if isinstance(v, str | int) else v),
    ]
    algorithms: Annotated[list[str], Field(min_length=1)]
    dtypes: Annotated[list[str], Field(min_length=1)] = ["float32"]
    ops: Annotated[list[str], Field(min_length=1)] = ["sum"]
    timing: Timing = Timing()
    check: bool = True
    case_timeout_s: Annotated[float, Field(gt=0)] = 300.0

    _alg = field_validator("algorithms")(_names("algorithm", ALGORITHMS.names()))
    _tr = field_validator("transports")(_names("transport", TRANSPORTS.names()))
    _dt = field_validator("dtypes")(_names("dtype", list(HOST_DTYPE)))
    _op = field_validator("ops")(_names("op", list(OPS)))

    @model_validator(mode="after")
    def _consistent(self) -> CollectiveScenario:
        for w, rpn in itertools.product(self.world_sizes, self.ranks_per_node):
            if rpn != "auto" and w % rpn:
                raise ValueError(f"ranks_per_node: {rpn} does not divide world size {w}")
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

    def byte_sizes(self) -> list[int]:
        return self.sizes.expand() if isinstance(self.sizes, SizeSweep) else list(self.sizes)

    def max_bytes_per_rank(self) -> int:
        """Host memory one rank needs at the largest size: buffer, scratch, check slices."""
        return 2 * max(self.byte_sizes()) + 64 * (1 << 20)


if TYPE_CHECKING:
    from bench.training.scenario import TrainingScenario

    Scenario = CollectiveScenario | TrainingScenario


SCENARIO_KINDS: dict[str, type[Frozen] | str] = {
    "collective": CollectiveScenario,
    # "module:Class", imported on first use (training scenarios import torch and bench.scenario)
    "training": "bench.training.scenario:TrainingScenario",
}


def scenario_model(kind: str) -> type[Frozen] | None:
    """The model of scenario ``kind`` (importing it on first use), or None if unknown."""
    model = SCENARIO_KINDS.get(kind)
    if isinstance(model, str):
        import importlib

        mod, _, cls = model.partition(":")
        model = getattr(importlib.import_module(mod), cls)
    return model


def load_scenario(path: Path | str) -> Scenario:
    """Parse and validate a scenario file; raises :class:`ScenarioError` with one line."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ScenarioError(f"{path}:{where} not valid YAML ({getattr(e, 'problem', e)})") from None
    return parse_scenario(raw, str(path))


def parse_scenario(raw: Any, source: str = "<scenario>") -> Scenario:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping of keys, got {type(raw).__name__}")
    raw = dict(raw)
    raw.setdefault("name", Path(source).stem)
    kind = raw.get("kind", "collective")
    model = scenario_model(kind)
    if model is None:
        raise ScenarioError(f"{source}: kind: unknown kind {kind!r}; valid: "
                            f"{', '.join(SCENARIO_KINDS)}")
    try:
        return model.model_validate(raw)  # type: ignore[return-value]
    except ValidationError as e:
        raise ScenarioError(f"{source}: {_one_line(e)}") from None


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"] if x not in ("list", "sweep"))
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}" if loc else msg


def check_memory(scenario: CollectiveScenario, source: str, ranks_on_host: int,
                 available: int) -> None:
    """Fail before launching when the largest size cannot fit in this host's free memory."""
    need = scenario.max_bytes_per_rank() * ranks_on_host
    if need > available:
        raise ScenarioError(
            f"{source}: sizes: {max(scenario.byte_sizes())} B needs about {need / 2**30:.1f} GiB "
            f"for {ranks_on_host} ranks on this host; {available / 2**30:.1f} GiB is available"
        )
