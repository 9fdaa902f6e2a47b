"""The ``emulate`` key of a collective scenario (``emulate: {profile: emu-4x2-slow, topology:
4x2}``), checked at load time, each failure one line naming the key."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import model_validator

from bench.costmodel.model import TopologyError, parse_topology
from bench.costmodel.profile import Profile, ProfileError, load_profile
from bench.emulate.links import EMULATORS, EmulatedLinks, EmulationError, link_delay
from bench.scenario_base import Frozen
from kernels.algorithm import get_algorithm


class Emulate(Frozen):
    profile: str  # preset name or path (relative to the working directory)
    topology: str  # bench/costmodel/model.py spec: NODESxRANKS[:options]

    @model_validator(mode="after")
    def _usable(self) -> Emulate:
        self.job(self.ranks())  # the profile loads and has every class the whole topology uses
        return self

    def ranks(self) -> int:
        """Ranks of the whole emulated cluster."""
        try:
            return parse_topology(self.topology).world
        except TopologyError as e:
            raise ValueError(str(e)) from None

    def load_profile(self) -> Profile:
        try:
            return load_profile(self.profile)
        except ProfileError as e:
            raise ValueError(f"profile: {e}") from None

    def job(self, world: int) -> EmulatedLinks:
        """``world`` ranks on the emulated cluster; ValueError (one line) when they cannot be."""
        try:
            return link_delay(self.load_profile(), self.topology, world)
        except EmulationError as e:
            raise ValueError(str(e)) from None

    def check(self, worlds: Sequence[int], transports: Sequence[str],
              ranks_per_node_given: bool) -> None:
        """The scenario's other keys against the emulated cluster (ValueError, one line)."""
        if ranks_per_node_given:
            raise ValueError("ranks_per_node: with emulate the nodes are the topology's "
                             f"({self.topology}); leave ranks_per_node out")
        for t in transports:
            if t not in EMULATORS:
                raise ValueError(f"transports: {t} cannot be emulated (emulate works with "
                                 f"{', '.join(EMULATORS)})")
        if not worlds:
            raise ValueError(f"world_sizes: emulate needs world sizes that fit {self.topology}")
        for w in worlds:
            try:
                self.job(w)
            except ValueError as e:
                raise ValueError(f"world_sizes: {e}") from None

    def schedules_only(self, collective: str,
                       algorithms: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
        """The algorithms that can be emulated (schedules), and a note per vendor call left out
        (its messages, inside the MPI library, cannot be delayed)."""
        kept = tuple(a for a in algorithms if not get_algorithm(collective, a).is_vendor)
        notes = [f"{collective} {a}: left out of the emulated run (a vendor call's messages "
                 f"cannot be delayed)" for a in algorithms if a not in kept]
        return kept, notes
