"""A model built on the meta device: parameter shapes without memory, for the analytic model
(:meth:`bench.models.spec.ModelSpec.build_meta`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from bench.models.chain import Chain


def on_meta(build: Callable[[], Chain]) -> Chain:
    """``build()`` on the meta device: shapes without memory (for the analytic model), its
    random initialisation skipped (on meta, ``normal_`` imports much of torch)."""
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
