"""``tensor``: Megatron-style tensor parallelism over all ranks with DTensor
``parallelize_module`` (column-parallel then row-parallel linear pairs: q/k/v -> proj and
fc -> proj in each GPT block). Every rank sees the whole batch: one replica per job."""

from __future__ import annotations

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

from bench.models.base import ModelSpec
from bench.training.scenario import StrategySpec
from bench.training.strategies.common import ModelTrainer, job_mesh
from bench.training.strategy import TrainContext, Trainer, strategy


def check_degree(model: ModelSpec, degree: int) -> None:
    """Raise ValueError when ``degree`` cannot shard ``model``'s plan evenly."""
    if model.tp_plan is None:
        raise ValueError(f"model {model.name} has no tensor-parallel plan")
    if model.heads is not None and model.heads % degree:
        raise ValueError(f"tensor degree {degree} does not divide the {model.heads} attention heads")
    meta = model.build_meta()
    for path, style in model.tp_plan().items():
        w = meta.get_submodule(path).weight
        dim = w.shape[0] if style == "colwise" else w.shape[1]
        if dim % degree:
            raise ValueError(f"tensor degree {degree} does not divide {path}'s sharded width {dim}")


def apply_plan(model: nn.Module, spec: ModelSpec, mesh: DeviceMesh) -> None:
    assert spec.tp_plan is not None
    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    parallelize_module(model, mesh, {p: styles[s]() for p, s in spec.tp_plan().items()})


def _check(spec: StrategySpec, model: ModelSpec, world: int) -> None:
    check_degree(model, world)


@strategy("tensor", check=_check)
def build(ctx: TrainContext) -> Trainer:
    """Megatron tensor parallelism (DTensor colwise/rowwise pairs) across all ranks."""
    model = ctx.build_model().to(ctx.device)
    apply_plan(model, ctx.model, job_mesh(ctx.device.type, (ctx.world,)))
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), 1, 0)
