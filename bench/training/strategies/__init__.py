"""The strategies, registered by name on import (each module is one strategy; ``fsdp`` is two).

Imported in the order of :data:`bench.training.rules.RULES`, so both registries list the names
alike."""

from __future__ import annotations

from bench.training.strategy import STRATEGIES, Strategy

# isort: off
from bench.training.strategies import ddp, zero1, fsdp, tensor, pipeline, hybrid, ps  # noqa: F401
# isort: on

__all__ = ["STRATEGIES", "Strategy"]
