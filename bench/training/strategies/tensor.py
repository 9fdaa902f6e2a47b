"""``tensor``: Megatron-style tensor parallelism over all ranks with DTensor
``parallelize_module`` (column- then row-parallel linear pairs); every rank sees the whole batch.
Colwise weights and biases split on dim 0, rowwise weights on dim 1, the rest replicated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.advise.comm import tensor_calls
from bench.advise.layout import Layout
from bench.training.analytic import Acts, Held, numel, tp_local, tp_plan_of
from bench.training.rules import check_degree
from bench.training.strategy import NoOptions, Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    from torch import nn
    from torch.distributed.device_mesh import DeviceMesh

    from bench.models.base import ModelSpec
    from bench.training.analytic import Param


def apply_plan(model: nn.Module, spec: ModelSpec, mesh: DeviceMesh) -> None:
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    assert spec.tp_plan is not None
    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    parallelize_module(model, mesh, {p: styles[s]() for p, s in spec.tp_plan().items()})


def build(ctx: TrainContext) -> Trainer:
    from bench.training.trainer import ModelTrainer, job_mesh

    model = ctx.build_model().to(ctx.device)
    apply_plan(model, ctx.model, job_mesh(ctx.device.type, (ctx.world,)))
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), 1, 0)


def held(model: ModelSpec, opts: NoOptions, ps: list[Param], n: int, r: int) -> Held:
    plan = tp_plan_of(model)
    local = [numel(tp_local(plan, p, n)) for p in ps]
    return Held(local, local, local)


register(Strategy(
    "tensor", "Megatron tensor parallelism (DTensor colwise/rowwise pairs) across all ranks",
    build, held, tensor_calls, lambda opts, world: Layout(tensor=world),
    check=lambda opts, model, world, batch: check_degree(model, world),
    acts=lambda model, opts, world, rank: Acts(tensor=world), order=4, table="tensor",
    needs_shape=True))
