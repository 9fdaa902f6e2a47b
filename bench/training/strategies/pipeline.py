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
import itertools

import torch
from torch import nn
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
)

from bench.models.base import Batch, ModelSpec
from bench.training.scenario import StrategySpec
from bench.training.strategy import TrainContext, Trainer, strategy

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


def balanced_split(sizes: list[int], stages: int) -> list[int]:
    """Start index of each stage: contiguous groups of ``sizes`` (>= 1 each) minimising the
    largest group's sum (ties: earlier cuts)."""
    n = len(sizes)
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    @functools.cache
    def best(i: int, k: int) -> tuple[int, tuple[int, ...]]:
        """Best split of sizes[i:] into k groups: (largest sum, starts)."""
        if k == 1:
            return prefix[n] - prefix[i], (i,)
        out: tuple[int, tuple[int, ...]] | None = None
        for j in range(i + 1, n - k + 2):
            rest, starts = best(j, k - 1)
            cand = (max(prefix[j] - prefix[i], rest), (i, *starts))
            if out is None or cand[0] < out[0]:
                out = cand
        assert out is not None
        return out

    return list(best(0, stages)[1])


def stage_pieces(model: ModelSpec, stages: int) -> list[range]:
    meta = model.build_meta()
    sizes = [sum(p.numel() for p in piece.parameters()) for piece in meta.pieces]
    starts = [*balanced_split(sizes, stages), len(sizes)]
    return [range(a, b) for a, b in itertools.pairwise(starts)]


def local_stages(spec: StrategySpec, rank: int, world: int) -> list[int]:
    return [rank + k * world for k in range(spec.pipeline_stages_per_rank)]


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
