"""``zero1``: DDP for gradients + ZeroRedundancyOptimizer (optimizer state sharded by whole
parameters, greedily by size; each owner broadcasts its updated parameters after the step)."""

from __future__ import annotations

from torch.nn.parallel import DistributedDataParallel as DDP

from bench.training.strategies.common import ModelTrainer
from bench.training.strategy import TrainContext, Trainer, strategy


@strategy("zero1")
def build(ctx: TrainContext) -> Trainer:
    """ZeRO-1: optimizer state sharded across data-parallel ranks (ZeroRedundancyOptimizer)."""
    # imported here, not at the top: torch.distributed.optim (it pulls FSDP and DTensor) costs
    # ~1-2 s per process, paid only by zero1 jobs (every launcher and rank imports the registry)
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = ctx.build_model().to(ctx.device)
    ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    wrapped = DDP(model, device_ids=ids, bucket_cap_mb=ctx.spec.bucket_mb)
    opt = ZeroRedundancyOptimizer(wrapped.parameters(), optimizer_class=torch.optim.Adam,
                                  lr=ctx.lr, foreach=False)
    return ModelTrainer(ctx, wrapped, opt, ctx.world, ctx.rank, held=model, state_of=opt.optim)
