"""The single-process reference: the same model, seed, optimiser and global batches on one
rank, to measure how far a strategy's loss trajectory drifts from it."""

from __future__ import annotations

import torch

from bench.models.base import ModelSpec
from bench.training.trainer import loss_step


def reference_losses(model: ModelSpec, global_batch: int, steps: int, seed: int, lr: float,
                     device: torch.device) -> list[float]:
    torch.manual_seed(seed)
    net = model.build().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=lr, foreach=False)
    return [loss_step(net, model, model.batch(global_batch, s, seed), device, opt)
            for s in range(steps)]
