"""What a reference model is to the training code: a named config (:mod:`bench.models.catalog`)
that builds a chain of pieces and makes deterministic batches."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from bench.models.catalog import CATALOG
from bench.models.spec import ModelSpec
from kernels.registry import Registry


class Chain(nn.Module):
    """``forward`` applies ``pieces`` in order; the pipeline splits the list into stages."""

    def __init__(self, pieces: list[nn.Module]) -> None:
        super().__init__()
        self.pieces = nn.ModuleList(pieces)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for p in self.pieces:
            x = p(x)
        return x


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor
    targets: torch.Tensor
    tokens: int  # tokens in the batch (0 for non-sequence models)

    def to(self, device: torch.device) -> Batch:
        return Batch(self.inputs.to(device), self.targets.to(device), self.tokens)

    def slice(self, start: int, stop: int) -> Batch:
        per = self.tokens // self.inputs.shape[0] if self.tokens else 0
        return Batch(self.inputs[start:stop], self.targets[start:stop], per * (stop - start))


def on_meta(build: Callable[[], Chain]) -> Chain:
    """``build()`` on the meta device: shapes without memory (for the analytic model), its
    random initialisation skipped (on meta, ``normal_`` alone costs a second of imports)."""
    with torch.device("meta"), _SkipNormalInit():
        return build()


class _SkipNormalInit(TorchFunctionMode):
    """Leaves tensors as they are where a module's ``reset_parameters`` draws normal values."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if func in _NORMAL_INITS:
            return args[0] if args else (kwargs or {})["tensor"]
        return func(*args, **(kwargs or {}))


_NORMAL_INITS = frozenset({torch.Tensor.normal_, torch.nn.init.normal_, torch.nn.init.trunc_normal_})


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
