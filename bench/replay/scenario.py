"""``kind: replay`` scenarios: one step of a job's communication, as ``commbench import`` wrote
it from a trace (or as a user edits it): typed, frozen, validated at load time. Each default and
its meaning stated here once."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from bench.measure.case import Timing
from bench.replay.calls import ITEMSIZE
from bench.scenario_base import Frozen, PositiveInt, Scenario
from kernels.collective import resolve
from kernels.ops import ITEMSIZE as HARNESS_ITEMSIZE

# The collective that replays each operation: a send of a to b is a broadcast rooted at a in the
# group {a, b} (the same bytes, one way, checked exactly).
COLLECTIVE = {"all_reduce": "all_reduce", "all_gather": "all_gather",
              "reduce_scatter": "reduce_scatter", "broadcast": "broadcast",
              "all_to_all": "alltoall", "send": "broadcast"}
STAND_IN = "float32"  # element type that replays a call whose type the harness has not


class ReplayCall(Frozen):
    """One call of the step: every rank of ``group`` takes part (a send: ``root`` to the other)."""

    op: Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send"]
    group: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
    nbytes: Annotated[int, Field(ge=0)]  # nccl-tests' size S (docs/replay.md)
    dtype: str = "float32"
    root: int | None = None  # broadcast: the root; send: the sender (global ranks)
    gap_us: float | None = None  # most any member waited since its previous call (the trace's)

    @model_validator(mode="after")
    def _valid(self) -> ReplayCall:
        if self.dtype not in ITEMSIZE:
            raise ValueError(f"dtype: unknown element type {self.dtype!r}")
        if self.nbytes % ITEMSIZE[self.dtype]:
            raise ValueError(f"nbytes: {self.nbytes} is not whole {self.dtype} elements")
        if len(set(self.group)) != len(self.group):
            raise ValueError(f"group: a rank listed twice in {self.group}")
        if self.op in ("send", "broadcast") and self.root not in self.group:
            raise ValueError(f"root: {self.op} needs a root in its group {self.group}")
        if self.op == "send" and len(self.group) != 2:
            raise ValueError(f"group: a send is between two ranks, got {self.group}")
        self.case()  # a size the harness can replay
        return self

    @property
    def collective(self) -> str:
        return COLLECTIVE[self.op]

    def case(self) -> Case:
        """What the harness runs for this call (its element type, or float32 standing in)."""
        spec, p = resolve(self.collective), len(self.group)
        dtype = self.dtype if self.dtype in HARNESS_ITEMSIZE else STAND_IN
        item = HARNESS_ITEMSIZE[dtype]
        count = -(-self.nbytes // item)
        if spec.divides and count % p:
            if dtype == self.dtype:
                raise ValueError(f"nbytes: {self.op} of {self.nbytes} B is not {p} equal blocks "
                                 f"of {self.dtype}")
            count += p - count % p
        root = sorted(self.group).index(self.root) if self.root is not None else 0
        return Case(self.collective, tuple(sorted(self.group)), count, dtype, count * item, root)


@dataclass(frozen=True)
class Case:
    """A distinct call as the harness measures it (``root``: index in the group)."""

    collective: str
    group: tuple[int, ...]
    count: int
    dtype: str
    nbytes: int
    root: int = 0

    @property
    def label(self) -> str:
        return group_label(self.group)

    def on(self, dtypes: tuple[str, ...]) -> str:
        """The element type that replays this call on a transport of ``dtypes``: its own, else
        one of the same size (bfloat16 as float16 on host transports): the same bytes."""
        if self.dtype in dtypes:
            return self.dtype
        same = [d for d in dtypes if HARNESS_ITEMSIZE.get(d) == HARNESS_ITEMSIZE[self.dtype]]
        if not same:
            raise ValueError(f"no element type of {HARNESS_ITEMSIZE[self.dtype]} bytes")
        return same[0]


def group_label(group: tuple[int, ...] | list[int]) -> str:
    """``0-3`` for consecutive ranks, else ``0,2``."""
    g = sorted(group)
    if len(g) > 2 and g == list(range(g[0], g[-1] + 1)):
        return f"{g[0]}-{g[-1]}"
    return ",".join(map(str, g))


class ReplayScenario(Scenario):
    """A job's step of communication, replayed call by call through the harness."""

    name: str = "replay"
    description: str = ""
    kind: Literal["replay"] = "replay"
    source: str = ""  # the trace it was imported from
    format: str = ""  # the importer that read it
    world_size: PositiveInt  # ranks of the traced job
    transports: Annotated[list[str], Field(min_length=1)] = Field(["mpi"])
    algorithms: Annotated[list[str], Field(min_length=1)] = Field(["native"])  # each call's
    timing: Timing = Timing(warmup=2, time_budget_ms=50, min_iters=5, max_iters=1000,
                            repetitions=2)
    check: bool = True  # every call's output checked exactly after timing
    case_timeout_s: Annotated[float, Field(gt=0)] = 120.0
    calls: Annotated[list[ReplayCall], Field(min_length=1)]

    @model_validator(mode="after")
    def _valid(self) -> ReplayScenario:
        from kernels.algorithm import algorithm_names
        from kernels.transports import TRANSPORTS

        for i, c in enumerate(self.calls):
            for t in self.transports:
                try:
                    c.case().on(TRANSPORTS.get(t).dtypes)
                except ValueError as e:
                    raise ValueError(f"calls.{i}.dtype: transport {t} has {e}") from None
            if max(c.group) >= self.world_size:
                raise ValueError(f"calls.{i}.group: rank {max(c.group)} of a "
                                 f"{self.world_size}-rank job")
            bad = [a for a in self.algorithms if a not in algorithm_names(c.collective)]
            if bad:
                raise ValueError(f"algorithms: {bad[0]!r} is no {c.collective} algorithm "
                                 f"(call {i}); valid: {', '.join(algorithm_names(c.collective))}")
        return self

    @property
    def world_sizes(self) -> list[int]:
        return [self.world_size]

    def cases(self) -> list[tuple[Case, int]]:
        """The distinct calls as the harness measures them, first seen first, with their counts."""
        return list(Counter(c.case() for c in self.calls).items())
