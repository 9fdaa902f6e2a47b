"""Cases: one (algorithm, size, dtype, op, transport, world) point of a sweep, in size groups.

Algorithms of one size form a :class:`Group` and run back to back, in alternating order across
repetitions, so their ratios are fair on a noisy machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from bench.scenario import CollectiveScenario
from kernels.ops import ITEMSIZE


@dataclass(frozen=True, slots=True)
class Group:
    collective: str
    transport: str
    world_size: int
    ranks_per_node: int
    nbytes: int  # count * itemsize: requested sizes round down to whole elements
    count: int
    dtype: str
    op: str
    algorithms: tuple[str, ...]

    def label(self, algorithm: str | None = None) -> str:
        alg = algorithm or "/".join(self.algorithms)
        return (f"{self.collective} {alg} {self.transport} p={self.world_size} "
                f"rpn={self.ranks_per_node} {self.nbytes}B {self.dtype} {self.op}")


def groups(scenario: CollectiveScenario, world: int, ranks_per_node: int) -> Iterator[Group]:
    """Every group for one world size, small sizes first within each (transport, dtype, op)."""
    for transport, dtype, op in itertools.product(scenario.transports, scenario.dtypes,
                                                  scenario.ops):
        seen: set[int] = set()
        for requested in scenario.byte_sizes():
            count = requested // ITEMSIZE[dtype]
            if count < 1 or count in seen:
                continue
            seen.add(count)
            yield Group(scenario.collective, transport, world, ranks_per_node,
                        count * ITEMSIZE[dtype], count, dtype, op, tuple(scenario.algorithms))
