"""One world size of an emulated scenario: its topology and its transports' wrappers
(:data:`EMULATORS`, imported on first use so that validating a scenario imports no MPI)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from bench.emulate.links import EmulatedLinks
from bench.emulate.wait import SleepWaiter, Waiter
from kernels.topology import Topology

EMULATORS: dict[str, str] = {
    "mpi": "bench.emulate.transport:EmulatedMpi",
}


@dataclass(frozen=True)
class EmulatedJob:
    links: EmulatedLinks

    @property
    def topology(self) -> Topology:
        """The emulated nodes: what algorithms (hierarchical) and records see."""
        return self.links.placed.topology

    def wrap(self, transport: Any, waiter: Waiter | None = None) -> Any:
        """``transport`` with emulated links (its registry entry names the wrapper)."""
        where = EMULATORS.get(transport.name)
        if where is None:
            raise ValueError(f"transport {transport.name} cannot be emulated "
                             f"(emulated: {', '.join(EMULATORS)})")
        mod, _, cls = where.partition(":")
        wrapper = getattr(importlib.import_module(mod), cls)
        return wrapper(transport, self.links, waiter or SleepWaiter())
