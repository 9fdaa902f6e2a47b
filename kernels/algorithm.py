"""What an AllReduce algorithm is: a named function that fills a :class:`StepBuilder`.

Algorithms never time themselves, never allocate buffers and never touch a transport. The vendor
collective (``native``) sits in the same registry with ``build=None``: transports run it directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernels.registry import Registry
from kernels.schedule import Schedule, StepBuilder
from kernels.topology import Topology


@dataclass(frozen=True, slots=True)
class Problem:
    """One AllReduce to plan: who takes part, and how many elements of what size."""

    topology: Topology
    count: int
    itemsize: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"count must be >= 1, got {self.count}")
        if self.itemsize < 1:
            raise ValueError(f"itemsize must be >= 1, got {self.itemsize}")

    @property
    def world(self) -> int:
        return self.topology.world

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize


BuildFn = Callable[[Problem, StepBuilder], None]


@dataclass(frozen=True, slots=True)
class Algorithm:
    name: str
    build: BuildFn | None  # None: the transport's vendor collective
    summary: str

    @property
    def is_vendor(self) -> bool:
        return self.build is None

    def schedule(self, problem: Problem, rank: int) -> Schedule:
        """Rank ``rank``'s schedule (a pure function of problem and rank)."""
        return self._builder(problem, only=rank).build(rank)

    def schedules(self, problem: Problem) -> list[Schedule]:
        """Every rank's schedule, for verification and byte counting."""
        b = self._builder(problem, only=None)
        return b.build_all()

    def _builder(self, problem: Problem, only: int | None) -> StepBuilder:
        if self.build is None:
            raise TypeError(f"{self.name} is the vendor collective; it has no schedule")
        b = StepBuilder(problem.world, problem.count, only=only)
        self.build(problem, b)
        return b


ALGORITHMS: Registry[Algorithm] = Registry("algorithm")


def algorithm(name: str) -> Callable[[BuildFn], BuildFn]:
    """Register ``fn`` as AllReduce algorithm ``name``; its docstring's first line is the summary."""

    def deco(fn: BuildFn) -> BuildFn:
        summary = (fn.__doc__ or name).strip().splitlines()[0]
        ALGORITHMS.add(name, Algorithm(name, fn, summary))
        return fn

    return deco


ALGORITHMS.add(
    "native",
    Algorithm("native", None, "the transport's vendor AllReduce (MPI_Allreduce, ncclAllReduce)"),
)
