"""Reference models by name: an MLP, a nanoGPT-like decoder, its mixture-of-experts variant and a
small ResNet-style convnet.

Every model is a chain of *pieces* (``model.pieces``, an ``nn.ModuleList``) applied in order, so
the pipeline strategy can cut it into balanced stages without knowing the model. Each named
config comes with a synthetic, fixed-seed, learnable data set (see :mod:`bench.models.data`).

The names, configs and what validation reads from them (:data:`CATALOG`, :class:`ModelInfo`)
need no torch. ``MODELS``, ``ModelSpec`` and ``model_spec`` import torch and the model families
on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bench.models.catalog import CATALOG, ModelInfo

if TYPE_CHECKING:
    from bench.models.base import MODELS, ModelSpec, model_spec

__all__ = ["CATALOG", "MODELS", "ModelInfo", "ModelSpec", "model_spec"]
_TORCH_NAMES = ("MODELS", "ModelSpec", "model_spec")
_FAMILIES = ("mlp", "gpt", "moe", "convnet")  # each registers a ModelSpec per catalog entry on import


def __getattr__(name: str) -> Any:
    if name not in _TORCH_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for family in _FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return getattr(importlib.import_module(f"{__name__}.base"), name)
