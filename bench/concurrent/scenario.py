"""``kind: concurrent`` scenarios, typed, frozen, validated at load time: ``groups`` (communicators
timed alone and while the others run), ``overlap`` (a collective overlapped with a GEMM), or both."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from bench.collective.scenario import Size, _canonical
from bench.measure.case import Timing
from bench.scenario_base import Frozen, PositiveInt, Scenario
from kernels.algorithm import VENDOR, algorithm_names

# a self-launched concurrent job runs BLAS on one thread per rank (docs/concurrency.md)
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

Members = Literal["node", "across", "all"] | Annotated[
    list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]], Field(min_length=1)]
Progress = Literal["nonblocking", "thread"]


def _algorithm(collective: str, algorithm: str) -> None:
    names = algorithm_names(collective)
    if algorithm not in names:
        raise ValueError(f"unknown algorithm {algorithm!r} of {collective}; valid: "
                         f"{', '.join(names)}")


class GroupSpec(Frozen):
    """One kind of communicator: its collective and which ranks form each of its communicators."""

    name: str
    collective: Annotated[str, Field(description="the collective every communicator runs")]
    algorithm: str = Field(VENDOR, description="its algorithm (native: the vendor's call)")
    members: Members = Field("all", description=(
        "node: one communicator per node (tensor-parallel style); across: one per local rank, "
        "of the ranks at that place on every node (data-parallel style); all: every rank; or "
        "explicit lists of ranks, one per communicator, disjoint"))

    _c = field_validator("collective", mode="before")(lambda v: _canonical(v))

    @model_validator(mode="after")
    def _valid(self) -> GroupSpec:
        _algorithm(self.collective, self.algorithm)
        if isinstance(self.members, list):
            flat = [r for comm in self.members for r in comm]
            if len(set(flat)) != len(flat):
                raise ValueError(f"members: a rank in two communicators of group {self.name}")
        return self


class OverlapSpec(Frozen):
    """A collective on every rank overlapped with a GEMM whose time matches its own."""

    collective: str = "all_reduce"
    algorithm: str = VENDOR
    progress: Progress = Field("nonblocking", description=(
        "nonblocking: the MPI library's non-blocking call (MPI_Iallreduce ...), started before "
        "the GEMM and waited after it, progressed by the library; thread: a progress thread "
        "runs the algorithm (a vendor call or a commbench schedule) while the GEMM runs"))

    _c = field_validator("collective", mode="before")(lambda v: _canonical(v))

    @model_validator(mode="after")
    def _valid(self) -> OverlapSpec:
        _algorithm(self.collective, self.algorithm)
        if self.progress == "nonblocking" and self.algorithm != VENDOR:
            raise ValueError(f"progress nonblocking: only the vendor's call ({VENDOR}) has a "
                             f"non-blocking form; {self.algorithm} needs progress: thread")
        return self


class ConcurrentScenario(Scenario):
    """Groups of communicators at once, and communication overlapped with compute."""

    name: str = "concurrent"
    description: str = ""
    kind: Literal["concurrent"] = "concurrent"
    world_size: PositiveInt | None = Field(None, description=(
        "ranks to launch when self-launched (default: 4)"))
    ranks_per_node: PositiveInt | Literal["auto"] = Field("auto", description=(
        "ranks per node for members node/across (auto: by host name)"))
    sizes: Annotated[list[Size], Field(min_length=1)] = Field(["1MiB"], validate_default=True, description=(
        "message sizes of every group and overlap case"))
    dtype: str = "float32"
    groups: list[GroupSpec] = Field([], description="communicators that run at once (none, or 2+)")
    overlap: list[OverlapSpec] = Field([], description="overlap cases")
    rounds: PositiveInt = Field(2, description=(
        "rounds of each group's alone and together measurements, their order swapped every "
        "other round (a slower stretch of the machine falls on both); the table takes the "
        "median over rounds"))
    timing: Timing = Timing(warmup=2, time_budget_ms=100, min_iters=10, max_iters=500)
    check: bool = True
    case_timeout_s: Annotated[float, Field(gt=0)] = 300.0

    @model_validator(mode="after")
    def _valid(self) -> ConcurrentScenario:
        if not self.groups and not self.overlap:
            raise ValueError("give groups (two or more) or overlap cases, or both")
        if len(self.groups) == 1:
            raise ValueError("groups: one group runs alone; give two or more")
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError("groups: a name given twice")
        if len(set(self.sizes)) != len(self.sizes):
            raise ValueError("sizes: a size listed twice")
        return self

    @property
    def world_sizes(self) -> list[int]:
        return [self.world_size] if self.world_size is not None else []
