"""A named model that can be built: :class:`ModelSpec`; torch is imported only to build it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.models.catalog import ModelInfo

if TYPE_CHECKING:
    import torch

    from bench.models.chain import Batch, Chain


@dataclass(frozen=True)
class ModelSpec(ModelInfo):
    """A named model: ``build()`` makes it (call under a fixed seed), ``batch`` makes data."""

    build: Callable[[], Chain]
    batch: Callable[[int, int, int], Batch]  # (global_batch, step, seed) -> Batch
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

    def build_meta(self) -> Chain:
        """The model on the meta device (:func:`bench.models.meta.on_meta`)."""
        from bench.models.meta import on_meta

        return on_meta(self.build)


def family_call(family: str, name: str, *bound: Any) -> Callable[..., Any]:
    """``bench.models.<family>.<name>(*bound, ...)``, the family module (and torch) imported at
    the first call."""
    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"bench.models.{family}"), name)(*bound, *args)
    return call
