"""The strategies, registered by name on import (each module is one strategy)."""

from __future__ import annotations

from bench.training.strategy import STRATEGIES, Strategy

from bench.training.strategies import ddp, fsdp, hybrid, pipeline, tensor, zero1  # noqa: F401  isort: skip

__all__ = ["STRATEGIES", "Strategy"]
