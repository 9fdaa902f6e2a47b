"""``kind: probe`` scenarios: what ``commbench probe`` measures, typed, frozen, validated at load
time (the command's flags build the same model, so both check the same rules)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from bench.emulate.config import Emulate
from bench.probe.confirm import Confirm
from bench.probe.settings import Settings
from bench.scenario_base import Frozen, PositiveInt
from bench.units import parse_size

DEFAULT_SIZES = (8, 4 << 20)  # latency at 8 B, bandwidth at 4 MiB
_ZERO = re.compile(r"\s*0+(?:\.0*)?\s*[A-Za-z]*\s*")


def _size(value: object) -> int:
    """A message size, at least 1 byte (``0B`` is named as too small, not as a fraction)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool) \
            and _ZERO.fullmatch(str(value)):
        raise ValueError(f"a size must be at least 1 B, got {value!r}")
    return parse_size(value)  # type: ignore[arg-type]


Size = Annotated[int, BeforeValidator(_size)]


class ProbeScenario(Frozen):
    """Every pair of ranks: one-way latency, uni- and bidirectional bandwidth per size."""

    name: str = "probe"
    description: str = ""
    kind: Literal["probe"] = "probe"
    world_size: int | None = None  # self-launched ranks (>= 2, checked below); None: one per core
    ranks_per_node: PositiveInt | Literal["auto"] = "auto"  # virtual nodes, as in ``run``
    sizes: Annotated[list[Size], Field(min_length=1)] = Field(default=list(DEFAULT_SIZES))
    repeats: Annotated[int, Field(ge=3)] = 10  # samples per measurement, pair and size
    window: PositiveInt = 16  # messages per bandwidth sample
    warmup: Annotated[int, Field(ge=0)] = 1
    threshold: Annotated[float, Field(gt=0)] = 0.25  # relative excess that names a link or node
    round_timeout_s: Annotated[float, Field(gt=0)] = 300.0  # a round past it ends the job
    # the confirmation pass (bench/probe/confirm.py): at most confirm_max suspects (0: none),
    # each in confirm_blocks blocks of confirm_repeats samples against a reference pair
    confirm_max: Annotated[int, Field(ge=0)] = 16
    confirm_blocks: PositiveInt = 3
    confirm_repeats: Annotated[int, Field(ge=3)] = 5
    emulate: Emulate | None = None  # a modelled cluster on this host (bench/emulate/config.py)

    @model_validator(mode="after")
    def _consistent(self) -> ProbeScenario:
        if self.world_size is not None and self.world_size < 2:
            raise ValueError(f"world_size: a probe needs at least 2 ranks (one pair), "
                             f"got {self.world_size}")
        if (self.world_size is not None and self.ranks_per_node != "auto"
                and self.world_size % self.ranks_per_node):
            raise ValueError(f"ranks_per_node: {self.ranks_per_node} does not divide world "
                             f"size {self.world_size}")
        if len(set(self.sizes)) != len(self.sizes):
            raise ValueError("sizes: a size listed twice")
        if self.emulate is not None:
            if "ranks_per_node" in self.model_fields_set and self.ranks_per_node != "auto":
                raise ValueError(f"ranks_per_node: with emulate the nodes are the topology's "
                                 f"({self.emulate.topology}); leave ranks_per_node out")
            if self.world_size is not None:
                try:
                    self.emulate.job(self.world_size)
                except ValueError as e:
                    raise ValueError(f"world_size: {e}") from None
        return self

    @property
    def world_sizes(self) -> list[int]:
        """As other kinds have it (``commbench run``): the one world size, if given."""
        return [self.world_size] if self.world_size is not None else []

    def default_world_size(self, cores: int) -> int:
        """Ranks self-launched without ``world_size``: the emulated cluster's, else one per
        core (at least 2)."""
        return self.emulate.ranks() if self.emulate is not None else max(2, cores)

    def confirm(self) -> Confirm:
        return Confirm(self.threshold, self.confirm_max, self.confirm_blocks, self.confirm_repeats)

    def settings(self) -> Settings:
        return Settings(tuple(sorted(self.sizes)), self.repeats, self.window, self.warmup)
