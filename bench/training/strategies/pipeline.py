"""``pipeline``: torch.distributed.pipelining with GPipe, 1F1B or interleaved 1F1B.

The model's pieces are cut into ``world * stages_per_rank`` contiguous stages balanced by
parameter count (the split minimising the largest stage). Rank r holds stages r, r + world, ...
(the interleaved layout). The whole batch is one replica, cut into ``microbatches``; gradients
are scaled by 1/microbatches, so the update equals one step on the whole batch. Checkpointing
and precision act on the pieces inside each stage (autocast keeps GPT's residual stream in
fp32, so the activations between stages stay fp32).
"""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
)

from bench.models.base import Batch
from bench.training.stages import local_stages, stage_pieces
from bench.training.strategy import TrainContext, Trainer, strategy

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


class PipelineTrainer(Trainer):
    def __init__(self, ctx: TrainContext) -> None:
        self.ctx = ctx
        spec = ctx.spec
        n = ctx.world * spec.pipeline_stages_per_rank
        full = ctx.build_model()
        pieces = stage_pieces(ctx.model, n)
        self.stage_ids = local_stages(spec, ctx.rank, ctx.world)
        self.mods = [nn.Sequential(*(full.pieces[i] for i in pieces[s])).to(ctx.device)
                     for s in self.stage_ids]
        stages = [PipelineStage(m, s, n, ctx.device) for m, s in zip(self.mods, self.stage_ids)]
        self.amp = ctx.amp
        loss = functools.partial(self.amp.loss, ctx.model.loss)  # fp32 loss, scaled for fp16
        if spec.schedule == "interleaved":
            self.schedule = ScheduleInterleaved1F1B(stages, spec.microbatches, loss_fn=loss)
        else:
            self.schedule = SCHEDULES[spec.schedule](stages[0], spec.microbatches, loss_fn=loss)
        self.first, self.last = 0 in self.stage_ids, n - 1 in self.stage_ids
        self.opt = ctx.optimizer([p for m in self.mods for p in m.parameters()])

    def step(self, batch: Batch) -> float | None:
        dev = self.ctx.device
        self.opt.zero_grad(set_to_none=True)
        args = (batch.inputs.to(dev),) if self.first else ()
        losses: list[torch.Tensor] = []
        kw = {"target": batch.targets.to(dev), "losses": losses} if self.last else {}
        self.schedule.step(*args, **kw)
        self.amp.unscale(p for m in self.mods for p in m.parameters())
        self.opt.step()
        if not self.last:
            return None
        return float(torch.stack(losses).detach().mean()) / self.amp.scale

    def modules(self) -> list[nn.Module]:
        return list(self.mods)

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt]


@strategy("pipeline")
def build(ctx: TrainContext) -> Trainer:
    """Pipeline parallel (GPipe, 1F1B, interleaved 1F1B) over balanced stages."""
    return PipelineTrainer(ctx)
