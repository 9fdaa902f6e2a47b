"""A collective call to plan or price: which collective, who takes part, how many elements."""

from __future__ import annotations

from dataclasses import dataclass

from kernels import collective as coll
from kernels.collective import Collective, Layout
from kernels.schedule import Range
from kernels.topology import Topology


@dataclass(frozen=True, slots=True)
class Problem:
    """One call to plan: which collective, who takes part, how many elements of what size.

    ``count`` is the collective's buffer count ``n`` (the reported size in elements; already a
    multiple of p for collectives that divide)."""

    topology: Topology
    count: int
    itemsize: int
    collective: str = "all_reduce"
    root: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"count must be >= 1, got {self.count}")
        if self.itemsize < 1:
            raise ValueError(f"itemsize must be >= 1, got {self.itemsize}")
        if not 0 <= self.root < self.topology.world:
            raise ValueError(f"root {self.root} outside world size {self.topology.world}")

    @property
    def world(self) -> int:
        return self.topology.world

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize

    @property
    def spec(self) -> Collective:
        return coll.resolve(self.collective)

    def layout(self, rank: int) -> Layout:
        """Rank ``rank``'s in-place workspace (what schedules index)."""
        return self.spec.layout(self.count, self.world, rank, self.root)

    @property
    def space(self) -> int:
        """Workspace elements (the same on every rank for every collective)."""
        return self.layout(0).space

    @property
    def block(self) -> int:
        """Elements per rank block (n/p) for collectives that divide, else n."""
        return self.count // self.world if self.spec.divides else self.count

    def blocks(self, start: int = 0) -> list[Range]:
        """The p rank blocks of ``block`` elements from ``start``."""
        c = self.block
        return [Range(start + j * c, start + (j + 1) * c) for j in range(self.world)]
