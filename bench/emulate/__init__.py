"""Emulating a cluster on one host: the ranks play the nodes of a modelled topology, and every
message crossing a modelled link waits what the cost model says that link costs beyond the
host's own (docs/predict.md, "Emulating a cluster on one host")."""

from bench.emulate.links import EmulatedLinks, EmulationError, link_delay

__all__ = ["EmulatedLinks", "EmulationError", "link_delay"]
