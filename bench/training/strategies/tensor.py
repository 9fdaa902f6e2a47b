"""``tensor``: Megatron-style tensor parallelism over all ranks with DTensor
``parallelize_module`` (column-parallel then row-parallel linear pairs: q/k/v -> proj and
fc -> proj in each GPT block). Every rank sees the whole batch: one replica per job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from bench.models.base import ModelSpec
from bench.training.strategies.common import ModelTrainer, job_mesh
from bench.training.strategy import TrainContext, Trainer, strategy

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


def apply_plan(model: nn.Module, spec: ModelSpec, mesh: DeviceMesh) -> None:
    # imported here, not at the top: DTensor costs ~1 s per process, paid only by tensor jobs
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    assert spec.tp_plan is not None
    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    parallelize_module(model, mesh, {p: styles[s]() for p, s in spec.tp_plan().items()})


@strategy("tensor")
def build(ctx: TrainContext) -> Trainer:
    """Megatron tensor parallelism (DTensor colwise/rowwise pairs) across all ranks."""
    model = ctx.build_model().to(ctx.device)
    apply_plan(model, ctx.model, job_mesh(ctx.device.type, (ctx.world,)))
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), 1, 0)
