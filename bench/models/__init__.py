"""Reference models by name: an MLP, a nanoGPT-like decoder, its mixture-of-experts variant and a
small ResNet-style convnet, each a chain of pieces (``model.pieces``) the pipeline cuts into
stages, with a synthetic fixed-seed data set (:mod:`bench.models.data`). :data:`CATALOG` needs no
torch; ``MODELS``, ``ModelSpec`` and ``model_spec`` import torch and the families on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bench.models.catalog import CATALOG, ModelInfo

if TYPE_CHECKING:
    from bench.models.base import MODELS, ModelSpec, model_spec

__all__ = ["CATALOG", "MODELS", "ModelInfo", "ModelSpec", "model_spec"]
_TORCH_NAMES = ("MODELS", "ModelSpec", "model_spec")


def __getattr__(name: str) -> Any:
    if name not in _TORCH_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for family in dict.fromkeys(CATALOG.get(n).family for n in CATALOG):  # bench.models.<family>
        importlib.import_module(f"{__name__}.{family}")
    return getattr(importlib.import_module(f"{__name__}.base"), name)
