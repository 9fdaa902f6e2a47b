"""The torch side shared by strategies (imported by their ``build`` only): one loss step, the
trainer of strategies that wrap one whole model, DDP's wrapping and the job's device mesh; and
the single-process reference every strategy's losses are held against."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from bench.models.base import Batch, ModelSpec
from bench.training.options import Amp
from bench.training.strategy import TrainContext, Trainer

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


def ddp(ctx: TrainContext, model: nn.Module, bucket_mb: float) -> DDP:
    """``model`` wrapped in DistributedDataParallel with ``bucket_mb`` buckets on ``ctx``'s device."""
    ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    return DDP(model, device_ids=ids, bucket_cap_mb=bucket_mb)


def loss_step(model: nn.Module, spec: ModelSpec, batch: Batch, device: torch.device,
              opt: torch.optim.Optimizer, amp: Amp,
              after_backward: Callable[[], None] | None = None) -> float:
    """forward, loss, backward, optimiser step on ``batch``; the (unscaled) loss as a float.
    ``amp``: the loss in fp32 and scaled, the gradients unscaled before the step."""
    opt.zero_grad(set_to_none=True)
    out, target = model(batch.inputs.to(device)), batch.targets.to(device)
    loss = amp.loss(spec.loss, out, target)
    loss.backward()
    if after_backward:
        after_backward()
    amp.unscale(p for g in opt.param_groups for p in g["params"])
    opt.step()
    return float(loss.detach()) / amp.scale


def reference_losses(model: ModelSpec, global_batch: int, steps: int, seed: int, lr: float,
                     device: torch.device) -> list[float]:
    """The same model, seed, optimiser and global batches on one rank, to measure how far a
    strategy's loss trajectory drifts from it."""
    torch.manual_seed(seed)
    net = model.build().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=lr, foreach=False)
    fp32 = Amp.of("fp32", device)
    return [loss_step(net, model, model.batch(global_batch, s, seed), device, opt, fp32)
            for s in range(steps)]


class ModelTrainer(Trainer):
    def __init__(self, ctx: TrainContext, model: nn.Module, opt: torch.optim.Optimizer,
                 dp_degree: int, replica: int, held: nn.Module | None = None,
                 state_of: torch.optim.Optimizer | None = None) -> None:
        self.ctx, self.model, self.opt = ctx, model, opt
        self.dp_degree, self.replica = dp_degree, replica
        self.held = held or model
        self._state_of = state_of or opt

    def step(self, batch: Batch) -> float | None:
        return loss_step(self.model, self.ctx.model, self.local_share(batch), self.ctx.device,
                         self.opt, self.ctx.amp)

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self._state_of]
