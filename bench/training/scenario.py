"""Training scenarios: strategies x models x world sizes, validated at load time without torch.
A strategy is a mapping (``{name: pipeline, schedule: gpipe}``) or ``name[:option]``
(``ddp:ring``); keys and rules: docs/training.md (Scenario keys, Strategies)."""

from __future__ import annotations

import importlib.util
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    TypeAdapter,
    field_validator,
    model_serializer,
    model_validator,
)

from bench.models.catalog import CATALOG, ModelInfo
from bench.scenario_base import Frozen, Scenario
from bench.training.strategy import Strategy as StrategyDef
from bench.training.strategy import strategies

PositiveInt = Annotated[int, Field(ge=1)]


def _from_string(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    name, _, opt = v.partition(":")
    if not opt:
        return {"name": name}
    key = strategies().get(name).short if name in strategies() else None
    if key is None:
        raise ValueError(f"strategy {name!r} takes no ':option' (got {v!r})")
    return {"name": name, key: opt}


def strategy_options(name: str, given: dict[str, Any]) -> Any:
    """Strategy ``name``'s own options dataclass from ``given``, validated by pydantic against
    its field types."""
    s = strategies().get(name)
    unknown = [k for k in given if k not in s.option_names]
    if unknown:
        valid = ", ".join(s.option_names) or "none"
        raise ValueError(f"strategy {name!r} takes no option {unknown[0]!r} (its options: "
                         f"{valid}; and checkpoint, precision)")
    return TypeAdapter(s.options).validate_python(given)


class StrategySpec(Frozen):
    """A strategy with its own options (:attr:`options`, the strategy's dataclass) and the two
    every strategy takes. Written flat (``{name: pipeline, schedule: gpipe}``) and dumped flat."""

    name: str
    options: Any = None
    # every strategy: activation checkpointing (bench.training.options) and autocast precision
    checkpoint: bool | float | tuple[int, ...] = False
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"

    @model_validator(mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if not isinstance(v, dict) or "options" in v or "name" not in v:
            return v
        common = {k: v[k] for k in ("name", "checkpoint", "precision") if k in v}
        own = {k: x for k, x in v.items() if k not in common}
        if v["name"] not in strategies():
            return common  # the scenario names the unknown strategy, with the valid ones
        return {**common, "options": strategy_options(v["name"], own)}

    @classmethod
    def of_record(cls, options: dict[str, Any]) -> StrategySpec:
        """The spec a record's ``strategy_options`` hold. Records written before each strategy
        had options of its own hold every strategy's keys: those not its own are dropped."""
        keep = {"name", "checkpoint", "precision", *strategies().get(options["name"]).option_names}
        return cls.model_validate({k: v for k, v in options.items() if k in keep})

    @model_serializer(mode="wrap")
    def _flat(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        opts = out.pop("options", None) or {}
        return {"name": out.pop("name"), **opts, **out}

    @field_validator("checkpoint", mode="before")
    @classmethod
    def _checkpoint(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int | float):
            if not 0 < v < 1:
                raise ValueError(f"checkpoint: a fraction must lie in (0, 1), got {v!r} "
                                 f"(true checkpoints every piece)")
            return float(v)
        if isinstance(v, list | tuple):
            if not v or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v):
                raise ValueError(f"checkpoint: a list must name piece indices >= 0, got {list(v)!r}")
            if len(set(v)) != len(v):
                raise ValueError(f"checkpoint: piece indices given twice in {list(v)!r}")
            return tuple(sorted(v))
        raise ValueError(f"checkpoint: true, false, a list of piece indices or a fraction in "
                         f"(0, 1), got {v!r}")

    def checkpointed(self, pieces: int) -> frozenset[int]:
        """Indices of the pieces (of a chain of ``pieces``) run under activation checkpointing."""
        c = self.checkpoint
        if c is True:
            return frozenset(range(pieces))
        if c is False:
            return frozenset()
        if isinstance(c, float):
            return frozenset(range(math.ceil(c * pieces)))
        return frozenset(c)

    @property
    def strategy(self) -> StrategyDef:
        return strategies().get(self.name)

    @property
    def label(self) -> str:
        opts = [self.strategy.label(self.options) if self.name in strategies() else ""]
        if self.checkpoint is not False:
            c = self.checkpoint
            opts.append("ckpt" if c is True else f"ckpt={c}" if isinstance(c, float)
                        else "ckpt=" + "+".join(map(str, c)))
        if self.precision != "fp32":  # amp=: ddp[fp16] stays the compression hook
            opts.append(f"amp={self.precision}")
        opts = [o for o in opts if o]
        return f"{self.name}[{','.join(opts)}]" if opts else self.name


Strategy = Annotated[StrategySpec, BeforeValidator(_from_string)]


class TrainingScenario(Scenario):
    name: str
    description: str = ""
    kind: Literal["training"] = "training"
    models: Annotated[list[str], Field(min_length=1)]
    strategies: Annotated[list[Strategy], Field(min_length=1)]
    world_sizes: list[PositiveInt] = Field(default_factory=list)  # empty: the launcher's world size
    batch_size: PositiveInt = 8  # samples per data-parallel replica per step (weak scaling)
    steps: PositiveInt = 5  # timed steps
    warmup: Annotated[int, Field(ge=0)] = 2  # untimed steps first; one last step counts bytes
    seed: int = 1234
    lr: Annotated[float, Field(gt=0)] = 1e-3
    # auto: nccl where torch sees a GPU, else gloo; nccl needs a GPU per rank (checked at launch)
    backend: Literal["auto", "gloo", "nccl"] = "auto"
    reference: bool = True  # run the single-process reference and record the loss deviation
    case_timeout_s: Annotated[float, Field(gt=0)] = 300.0

    @field_validator("models")
    @classmethod
    def _models(cls, v: list[str]) -> list[str]:
        if importlib.util.find_spec("torch") is None:  # finds it without importing it
            raise ValueError("training scenarios need torch (pip install 'commbench[training]'): "
                             "cannot import torch")
        for m in v:
            if m not in CATALOG:
                raise ValueError(f"unknown model {m!r}; valid: {', '.join(CATALOG.names())}")
        return v

    @model_validator(mode="after")
    def _cases(self) -> TrainingScenario:
        for i, s in enumerate(self.strategies):
            if s.name not in strategies():
                raise ValueError(f"strategies.{i}: unknown strategy {s.name!r}; "
                                 f"valid: {', '.join(strategies().names())}")
        for m in self.models:
            for s in self.strategies:
                errors = [e for w in self.world_sizes if (e := _misfit(s, m, w, self.batch_size))]
                if errors and len(errors) == len(self.world_sizes):
                    raise errors[0]  # fits no world size: a mistake, not a sweep boundary
        return self

    def cases(self, world: int) -> list[tuple[StrategySpec, str]]:
        """(strategy, model) pairs that fit ``world`` ranks, models outermost (record order).
        With world sizes named in the file, a pair that does not fit one of them (hybrid:2 at
        1 rank) is left out there; with none named, every pair runs and a misfit fails its case."""
        named = world in self.world_sizes
        return [(s, m) for m in self.models for s in self.strategies
                if not named or _misfit(s, m, world, self.batch_size) is None]


def _misfit(s: StrategySpec, model: str, world: int, batch_size: int) -> ValueError | None:
    """Why the case cannot run (:func:`check_case`), or None."""
    try:
        check_case(s, CATALOG.get(model), world, batch_size)
    except ValueError as e:
        return e
    return None


def check_case(s: StrategySpec, model: ModelInfo, world: int, batch_size: int) -> None:
    """Raise ValueError naming the strategy, model and world size when the case cannot run
    (``model``: a catalog entry, or the torch :class:`~bench.models.base.ModelSpec`, which is one)."""
    try:
        s.strategy.check(s.options, model, world, batch_size)
        bad = sorted(i for i in s.checkpointed(model.num_pieces) if i >= model.num_pieces)
        if bad:  # checkpointed pieces must exist in the model
            raise ValueError(f"checkpoint names piece {bad[0]}, but the model has "
                             f"{model.num_pieces} pieces (0..{model.num_pieces - 1})")
    except ValueError as e:
        raise ValueError(f"{s.label} on {model.name} at world size {world}: {e}") from None
