"""``kind: probe`` scenarios, typed, frozen, validated at load time; ``commbench probe``'s flags are
generated from these fields (:mod:`bench.commands.probe`)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from bench.costmodel.delay import LinkDelay
from bench.emulate.config import Emulate
from bench.probe.confirm import Confirm
from bench.probe.links import Layout, from_launch, from_placed
from bench.probe.record import Settings
from bench.scenario_base import PositiveInt, Scenario
from bench.units import parse_size

_ZERO = re.compile(r"\s*0+(?:\.0*)?\s*[A-Za-z]*\s*")
THRESHOLD_HELP = (
    "relative excess over its class median that flags a link or node, when the excess is also "
    "beyond z times its noise and the spread between links: z = Phi^-1(1 - 0.05 / tests), so "
    "that the run's chance of any false flag is 5% (Bonferroni over its tests; z grows with "
    "ranks and sizes); a flagged suspect is named only when slow again re-measured alone")


def _size(value: object) -> int:
    """A message size, at least 1 byte (``0B`` is named as too small, not as a fraction)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool) \
            and _ZERO.fullmatch(str(value)):
        raise ValueError(f"a size must be at least 1 B, got {value!r}")
    return parse_size(value)  # type: ignore[arg-type]


Size = Annotated[int, BeforeValidator(_size)]


class ProbeScenario(Scenario):
    """Every pair of ranks: one-way latency, uni- and bidirectional bandwidth per size."""

    name: str = "probe"
    description: str = ""
    kind: Literal["probe"] = "probe"
    world_size: int | None = Field(None, description=(
        "ranks to launch, at least 2 (default: the emulated cluster's, else one per core, at "
        "least 2)"))
    ranks_per_node: PositiveInt | Literal["auto"] = Field("auto", description=(
        "virtual nodes of this many consecutive ranks (auto: by host name)"))
    sizes: Annotated[list[Size], Field(min_length=1)] = Field(
        ["8B", "4MiB"], validate_default=True, description=(
            "message sizes, latency at the smallest and bandwidth at the largest: "
            "comma-separated, each at least 1 B"))
    repeats: Annotated[int, Field(ge=3)] = Field(Settings.repeats, description=(
        "samples per pair, size and measurement, at least 3"))
    window: PositiveInt = Field(Settings.window, description="messages per bandwidth sample")
    warmup: Annotated[int, Field(ge=0)] = Field(
        Settings.warmup, description="untimed turns before the samples")
    threshold: Annotated[float, Field(gt=0)] = Field(Confirm.threshold, description=THRESHOLD_HELP)
    round_timeout_s: Annotated[float, Field(gt=0)] = Field(300.0, description=(
        "seconds a round or check may take before the job is ended"))
    confirm_max: Annotated[int, Field(ge=0)] = Field(Confirm.max_suspects, description=(
        "re-measure at most this many suspects of the tournament, one pair at a time against a "
        "reference pair of their class (0: no confirmation)"))
    confirm_blocks: PositiveInt = Field(Confirm.blocks, description=(
        "suspect blocks per confirmation, the reference measured before, between and after them"))
    confirm_repeats: Annotated[int, Field(ge=3)] = Field(Confirm.repeats, description=(
        "samples per confirmation block, size and measurement"))
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

    def setup(self, hosts: Sequence[str]) -> Setup:
        """The job's layout, and its links' delays when emulated; ValueError (one line) when
        the job cannot run this probe."""
        p = len(hosts)
        if p < 2:
            raise ValueError(f"a probe needs at least 2 ranks (one pair); this job has {p}")
        if self.world_size is not None and self.world_size != p:
            raise ValueError(f"world_size {self.world_size}: this job has {p} ranks")
        if self.emulate is None:
            try:
                return Setup(from_launch(hosts, self.ranks_per_node))
            except ValueError as e:
                raise ValueError(f"ranks_per_node: {e}") from None
        from bench.emulate.wait import SleepWaiter

        if len(set(hosts)) > 1:
            raise ValueError(f"emulate: the job spans {len(set(hosts))} hosts; an emulated "
                             "cluster runs on one")
        links = self.emulate.job(p)  # ValueError (one line) when the job does not fit
        placed, waiter = links.placed, SleepWaiter()  # sleep, then a short spin
        layout = from_placed(hosts, placed.node_of, placed.leaf_of, self.emulate.topology)
        return Setup(layout, links, lambda s: waiter.until(waiter.mark(), s))


@dataclass(frozen=True)
class Setup:
    layout: Layout
    delay: LinkDelay | None = None
    wait: Callable[[float], object] = time.sleep
