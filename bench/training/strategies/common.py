"""The trainer shared by strategies that wrap one whole model (ddp, zero1..3, tensor, hybrid)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch
from torch import nn

from bench.models.base import Batch
from bench.training.strategy import TrainContext, Trainer, loss_step

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


@functools.cache
def job_mesh(device_type: str, shape: tuple[int, ...], names: tuple[str, ...] | None = None
             ) -> DeviceMesh:
    """A device mesh over the job's ranks, made once per job and shared by its cases: a mesh
    makes process groups (NCCL communicators; on a GPU host even a 1-D CPU mesh over a gloo
    default group makes a new group), and a case's groups would otherwise outlive it."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(device_type, shape, mesh_dim_names=names)


class ModelTrainer(Trainer):
    def __init__(self, ctx: TrainContext, model: nn.Module, opt: torch.optim.Optimizer,
                 dp_degree: int, replica: int, held: nn.Module | None = None,
                 state_of: torch.optim.Optimizer | None = None) -> None:
        self.ctx, self.model, self.opt = ctx, model, opt
        self.dp_degree, self.replica = dp_degree, replica
        self._held = held or model
        self._state_of = state_of or opt

    def step(self, batch: Batch) -> float | None:
        return loss_step(self.model, self.ctx.model, self.local_share(batch), self.ctx.device,
                         self.opt, self.ctx.amp)

    def modules(self) -> list[nn.Module]:
        return [self._held]

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self._state_of]
