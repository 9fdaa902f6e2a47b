"""``zero1``: DDP for gradients + ZeroRedundancyOptimizer: optimizer state sharded by whole
parameters (:func:`greedy_owners`), each owner broadcasting its updated parameters after the
step. Its calls and memory: docs/advise.md and docs/training.md (Memory model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bench.advise.calls import Call, tally
from bench.advise.layout import Layout
from bench.advise.space import data_layouts
from bench.training.analytic import Held, greedy_owners, numel
from bench.training.strategies.ddp import BUCKET_MB, gradient_calls
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    from bench.advise.comm import CommContext
    from bench.models.base import ModelSpec
    from bench.training.analytic import Param


@dataclass(frozen=True)
class Options:
    bucket_mb: Annotated[float, Field(gt=0)] = BUCKET_MB  # DDP's gradient bucket cap


def build(ctx: TrainContext) -> Trainer:
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer

    from bench.training.trainer import ModelTrainer, ddp

    model = ctx.build_model().to(ctx.device)
    wrapped = ddp(ctx, model, ctx.opts.bucket_mb)
    opt = ZeroRedundancyOptimizer(wrapped.parameters(), optimizer_class=torch.optim.Adam,
                                  lr=ctx.lr, foreach=False)
    return ModelTrainer(ctx, wrapped, opt, ctx.world, ctx.rank, held=model, state_of=opt.optim)


def held(model: ModelSpec, opts: Options, ps: list[Param], n: int, r: int) -> Held:
    full = [numel(p.shape) for p in ps]
    return Held(full, full, [x for x, o in zip(full, greedy_owners(full, n)) if o == r])


def calls(ctx: CommContext) -> list[Call]:
    return [*gradient_calls(ctx), *tally("broadcast", (numel(p.shape) * ctx.bytes.param
                                                       for p in ctx.params), "data", "step", False)]


register(Strategy(
    "zero1", "ZeRO-1: optimizer state sharded across data-parallel ranks "
    "(ZeroRedundancyOptimizer)", build, held, calls,
    lambda opts, world: Layout(data=world, dp="zero1", bucket_mb=opts.bucket_mb), Options,
    layouts=lambda space: data_layouts(space, "zero1"), zero=1, order=1, table="zero1"))
