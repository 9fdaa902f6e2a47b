"""``zero2`` and ``zero3``: FSDP2 ``fully_shard`` on every model piece and on the root.

zero3 reshards parameters after forward (all-gathered again for backward); zero2 keeps them
unsharded from forward to the end of backward (one all-gather per step). Both shard gradients
(reduce-scatter) and optimizer state; parameters rest sharded between steps.
"""

from __future__ import annotations

from bench.training.strategies.common import ModelTrainer, job_mesh
from bench.training.strategy import TrainContext, Trainer, strategy


def _build(ctx: TrainContext, reshard: bool) -> Trainer:
    # imported here, not at the top: torch.distributed's FSDP costs ~1-2 s per process, paid
    # only by the jobs that run this strategy (every launcher and rank imports the registry)
    from torch.distributed.fsdp import fully_shard

    model = ctx.build_model().to(ctx.device)
    # the mesh names our device: fully_shard's default mesh is on torch's accelerator (CUDA
    # whenever a GPU exists), which would move a gloo/CPU run's parameters onto the GPU
    mesh = job_mesh(ctx.device.type, (ctx.world,))
    for piece in model.pieces:
        fully_shard(piece, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), ctx.world, ctx.rank)


@strategy("zero2")
def zero2(ctx: TrainContext) -> Trainer:
    """ZeRO-2: FSDP2 without reshard after forward (gradients and optimizer state sharded)."""
    return _build(ctx, reshard=False)


@strategy("zero3")
def zero3(ctx: TrainContext) -> Trainer:
    """ZeRO-3: FSDP2 full shard (parameters, gradients and optimizer state sharded)."""
    return _build(ctx, reshard=True)
