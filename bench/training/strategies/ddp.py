"""``ddp``: DistributedDataParallel, each rank a replica on ``batch_size`` samples.

Gradient buckets are averaged by DDP's own AllReduce (``hook: default``), compressed to
fp16/bf16 (DDP's compression hooks; losses then match the reference to ~1e-3), or run through a
commbench AllReduce schedule over the torch p2p transport (``hook: ring``, ``tree``, ...), so
algorithms can be compared inside real training.
"""

from __future__ import annotations

from torch.nn.parallel import DistributedDataParallel as DDP

from bench.training.hooks import install_hook
from bench.training.rules import bf16_hook_allowed
from bench.training.strategies.common import ModelTrainer
from bench.training.strategy import TrainContext, Trainer, strategy

__all__ = ["bf16_hook_allowed", "build"]  # bf16_hook_allowed: the ddp rule's condition, kept here too


@strategy("ddp")
def build(ctx: TrainContext) -> Trainer:
    """DistributedDataParallel with a choice of gradient AllReduce (DDP's, fp16/bf16, commbench's)."""
    model = ctx.build_model().to(ctx.device)
    ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    wrapped = DDP(model, device_ids=ids, bucket_cap_mb=ctx.spec.bucket_mb)
    install_hook(wrapped, ctx.spec.hook, ctx.device)
    return ModelTrainer(ctx, wrapped, ctx.optimizer(wrapped.parameters()), ctx.world, ctx.rank,
                        held=model)
