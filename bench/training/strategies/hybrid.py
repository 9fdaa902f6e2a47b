"""``hybrid``: a 2-D mesh, data x tensor parallel (torchtitan's 2-D layout): Megatron tensor
parallelism inside groups of ``tensor_degree`` consecutive ranks, FSDP2 (ZeRO-3) across the
groups over the data dimension. Ranks ``g*t .. g*t+t-1`` form replica ``g``."""

from __future__ import annotations

from bench.training.strategies.common import ModelTrainer, job_mesh
from bench.training.strategies.tensor import apply_plan
from bench.training.strategy import TrainContext, Trainer, strategy


@strategy("hybrid")
def build(ctx: TrainContext) -> Trainer:
    """2-D data x tensor parallel: TP within groups of tensor_degree ranks, FSDP2 across them."""
    # imported here, not at the top: torch.distributed's FSDP costs ~1-2 s per process, paid
    # only by the jobs that run this strategy (every launcher and rank imports the registry)
    from torch.distributed.fsdp import fully_shard

    t = ctx.spec.tensor_degree
    mesh = job_mesh(ctx.device.type, (ctx.world // t, t), ("dp", "tp"))
    model = ctx.build_model().to(ctx.device)
    apply_plan(model, ctx.model, mesh["tp"])
    for piece in model.pieces:
        fully_shard(piece, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), ctx.world // t, ctx.rank // t)
