"""``kind: bringup`` scenarios: typed, frozen, validated at load time; each field's default and
meaning stated here once (``commbench bringup``'s flags are generated from these fields)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from bench.collective.floors import Floor
from bench.collective.scenario import CollectiveScenario, Size, Timing
from bench.scenario_base import Frozen, PositiveInt

STAGES = ("host", "pairs", "all", "scale")
Stage = Literal["host", "pairs", "all", "scale"]


class BringupScenario(Frozen):
    """Every host alone, disjoint pairs of hosts, all hosts, and the cluster at 2, 4, ... hosts;
    a verdict per host and link."""

    name: str = "bringup"
    description: str = ""
    kind: Literal["bringup"] = "bringup"
    world_size: PositiveInt | None = Field(None, description=(
        "ranks to launch when self-launched (default: one per core, at least 2)"))
    stages: Annotated[list[Stage], Field(min_length=1)] = Field(list(STAGES), description=(
        "stages to run, in this order: host (each host alone), pairs (disjoint pairs of hosts, "
        "every pair once), all (every host), scale (2, 4, 8, ... hosts)"))
    collectives: Annotated[list[str], Field(min_length=1)] = Field(["all_reduce"], description=(
        "collectives of every stage"))
    algorithms: Annotated[list[str], Field(min_length=1)] = Field(["native", "ring"], description=(
        "algorithms of every collective (native: the vendor's)"))
    transport: str = Field("mpi", description=(
        "the transport every stage measures over, the one the training job will use (`commbench "
        "list` names them): mpi (host buffers), torch (torch.distributed: gloo on CPU, NCCL on "
        "GPU buffers), nccl (NCCL through CuPy, GPU buffers)"))
    sizes: Annotated[list[Size], Field(min_length=1)] = Field(
        ["64KiB", "4MiB"], validate_default=True, description=(  # parsed: a str would warn
            "message sizes: comma-separated; the largest decides the verdict (bandwidth)"))
    groups_at_once: PositiveInt | None = Field(None, description=(
        "at most this many groups of a stage's round measure at the same time (default: all; "
        "1 where the hosts share one machine's cores, as a testbed's do, so that peers are not "
        "judged by what they took from each other)"))
    slow_pct: Annotated[float, Field(gt=0, lt=100)] = Field(25.0, description=(
        "a host or link is slow when its bandwidth is this many percent below its reference: "
        "the median of its peers (hosts alike), or the profile's prediction"))
    confirm_blocks: Annotated[int, Field(ge=0)] = Field(3, description=(
        "a suspect of the host and pairs stages (a host or link below its peers) is re-measured "
        "alone this many times, alternating with a reference group alone, and named only when "
        "slow again (0: no re-measuring)"))
    profile: str | None = Field(None, description=(
        "a cost-model profile (preset name or file) whose predictions each case is also held "
        "against, as percent of expected"))
    timing: Timing = Timing(warmup=2, time_budget_ms=50, min_iters=5, max_iters=200,
                            repetitions=2)
    case_timeout_s: Annotated[float, Field(gt=0)] = Field(120.0, description=(
        "seconds a stage's case may take before the job is ended and the hang is named"))
    # floors a case must reach (bench/collective/floors.py); in a scenario file, not a flag
    expect: list[Floor] = Field(default=[])

    @model_validator(mode="after")
    def _valid(self) -> BringupScenario:
        if len(set(self.stages)) != len(self.stages):
            raise ValueError("stages: a stage listed twice")
        if len(set(self.sizes)) != len(self.sizes):
            raise ValueError("sizes: a size listed twice")
        self.cases(2)  # the collectives and algorithms exist: checked by the collective kind
        return self

    def cases(self, world: int, sizes: list[int] | None = None) -> CollectiveScenario:
        """The collective cases each group of ``world`` ranks runs (at ``sizes``)."""
        return CollectiveScenario(name=self.name, collectives=self.collectives,
                                  algorithms=self.algorithms, sizes=sizes or self.sizes,
                                  transports=[self.transport],
                                  world_sizes=[world], timing=self.timing, check=True,
                                  case_timeout_s=self.case_timeout_s)

    @property
    def world_sizes(self) -> list[int]:
        return [self.world_size] if self.world_size is not None else []
