"""What a reference model is to the training code: a named config (:mod:`bench.models.catalog`)
that builds a chain of pieces and makes deterministic batches."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from bench.models.catalog import CATALOG
from bench.models.chain import Batch, Chain
from bench.models.spec import ModelSpec
from kernels.registry import Registry

MODELS: Registry[ModelSpec] = Registry("model")


def model_spec(name: str) -> ModelSpec:
    return MODELS.get(name)


def add_family(family: str, build: Callable[[Any], Chain], batch: Callable[[Any, int, int, int], Batch],
               loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Register a :class:`ModelSpec` for every catalog entry of ``family`` (a family module's
    ``build(cfg)``, ``batch(cfg, global_batch, step, seed)`` and loss)."""
    for name in CATALOG:
        info = CATALOG.get(name)
        if info.family == family:
            MODELS.add(name, ModelSpec(name, info.config, build=functools.partial(build, info.config),
                                       batch=functools.partial(batch, info.config), loss=loss))
