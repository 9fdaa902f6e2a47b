"""What the harness measures: a :class:`Group` (one size of one collective on one transport, its
algorithms back to back) under a :class:`Timing`; any kind that times collectives builds these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from bench.scenario_base import Frozen, PositiveInt

OSU_LARGE = 8192  # OSU's LARGE_MESSAGE_SIZE: fewer iterations above it
OSU_ITERS = {"small": (100, 1000), "large": (10, 100)}  # (warm-up, timed) per OSU's collectives


class Timing(Frozen):
    """How a case is timed (docs/scenarios.md, "Timing")."""

    style: Literal["commbench", "osu"] = "commbench"
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

    def for_size(self, nbytes: int) -> Timing:
        """The timing of one size: OSU's iteration counts in ``style: osu`` where the scenario
        does not fix them (one block per algorithm, as OSU runs one loop)."""
        if self.style != "osu" or "iters" in self.model_fields_set:
            return self
        warm, iters = OSU_ITERS["large" if nbytes > OSU_LARGE else "small"]
        if "warmup" in self.model_fields_set:
            warm = self.warmup
        return self.model_copy(update={"iters": iters, "warmup": warm, "repetitions": 1})


@dataclass(frozen=True, slots=True)
class Group:
    collective: str
    transport: str
    world_size: int
    ranks_per_node: int
    nbytes: int  # count * itemsize: the size the collective reports, after rounding
    count: int
    dtype: str
    op: str
    algorithms: tuple[str, ...]
    root: int = 0
    bases: tuple[tuple[str, str], ...] = ()  # (variant, the vendor algorithm it runs)

    def base(self, algorithm: str) -> str:
        """The registered algorithm ``algorithm`` runs (a variant's ``native``)."""
        return dict(self.bases).get(algorithm, algorithm)

    def label(self, algorithm: str | None = None) -> str:
        alg = algorithm or "/".join(self.algorithms)
        return (f"{self.collective} {alg} {self.transport} p={self.world_size} "
                f"rpn={self.ranks_per_node} {self.nbytes}B {self.dtype} {self.op}")
