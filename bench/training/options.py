"""The options every strategy takes, activation checkpointing and autocast precision, applied
once by :meth:`TrainContext.build_model` before any strategy wraps, shards or cuts the model:
each chosen piece's ``forward`` is replaced on the instance, so parameter names, plans, FSDP2's
units and the pipeline's cuts are unchanged. docs/training.md (Activation checkpointing, Mixed
precision)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from bench.models.base import Chain

FP16_LOSS_SCALE = 1024.0  # 2**10: exact to apply and remove
DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Amp:
    """Autocast precision of one case: the dtype (None: fp32) and the static loss scale."""

    dtype: torch.dtype | None
    device_type: str
    scale: float = 1.0

    @classmethod
    def of(cls, precision: str, device: torch.device) -> Amp:
        return cls(DTYPES[precision], device.type, FP16_LOSS_SCALE if precision == "fp16" else 1.0)

    def loss(self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], out: torch.Tensor,
             target: torch.Tensor) -> torch.Tensor:
        """``fn`` in fp32 on the (upcast) output, times the loss scale."""
        loss = fn(out.float(), target)
        return loss * self.scale if self.scale != 1.0 else loss

    def unscale(self, params: Iterable[torch.Tensor]) -> None:
        """Divide the gradients by the loss scale (before the optimizer step)."""
        if self.scale == 1.0:
            return
        for p in params:
            if p.grad is not None:
                p.grad.mul_(1.0 / self.scale)


def _autocast(fwd: Callable[..., Any], device_type: str, dtype: torch.dtype, *args: Any,
              **kwargs: Any) -> Any:
    with torch.autocast(device_type, dtype=dtype):
        return fwd(*args, **kwargs)


def apply_options(model: Chain, checkpointed: frozenset[int], amp: Amp) -> Chain:
    """Wrap the forward of each piece: autocast when ``amp`` has a dtype, checkpoint (around
    the autocast) for the pieces in ``checkpointed``. Returns ``model``."""
    for i, piece in enumerate(model.pieces):
        fwd = piece.forward
        if amp.dtype is not None:
            fwd = functools.partial(_autocast, fwd, amp.device_type, amp.dtype)
        if i in checkpointed:
            fwd = functools.partial(checkpoint, fwd, use_reentrant=False)
        if amp.dtype is not None or i in checkpointed:
            piece.forward = fwd  # on the instance: names, plans and hooks are untouched
    return model
