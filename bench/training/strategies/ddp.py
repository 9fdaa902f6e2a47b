"""``ddp``: DistributedDataParallel, each rank a replica on ``batch_size`` samples.

Gradient buckets are averaged by DDP's own AllReduce (``hook: default``), compressed to
fp16/bf16 (DDP's compression hooks; losses then match the reference to ~1e-3), or run through a
commbench AllReduce schedule over the torch p2p transport (``hook: ring``, ``tree``, ...), so
algorithms can be compared inside real training.
"""

from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from bench.models.base import ModelSpec
from bench.training.hooks import install_hook
from bench.training.scenario import StrategySpec
from bench.training.strategies.common import ModelTrainer
from bench.training.strategy import TrainContext, Trainer, strategy


def bf16_hook_allowed() -> bool:
    """DDP's own condition for registering ``bf16_compress_hook`` (``_check_comm_hook`` in
    torch/nn/parallel/distributed.py): a CUDA/ROCm build with NCCL >= 2.10, or XPU with XCCL. It
    tests the build, not the backend: gloo reduces bf16 on CPU, so ``backend: gloo`` runs it too."""
    import torch.distributed as dist

    cuda_build = torch.version.cuda is not None or torch.version.hip is not None
    nccl = cuda_build and dist.is_nccl_available() and torch.cuda.nccl.version() >= (2, 10)
    xccl = dist.is_xccl_available() and torch.xpu.is_available()
    return bool(nccl or xccl)


def _check(spec: StrategySpec, model: ModelSpec, world: int) -> None:
    if spec.hook == "bf16" and not bf16_hook_allowed():
        raise ValueError("hook bf16 needs CUDA and NCCL: DDP takes bf16_compress_hook only in a "
                         "CUDA build of torch with NCCL >= 2.10; use fp16 on this one")


@strategy("ddp", check=_check)
def build(ctx: TrainContext) -> Trainer:
    """DistributedDataParallel with a choice of gradient AllReduce (DDP's, fp16/bf16, commbench's)."""
    model = ctx.build_model().to(ctx.device)
    ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    wrapped = DDP(model, device_ids=ids, bucket_cap_mb=ctx.spec.bucket_mb)
    install_hook(wrapped, ctx.spec.hook, ctx.device)
    return ModelTrainer(ctx, wrapped, ctx.optimizer(wrapped.parameters()), ctx.world, ctx.rank,
                        held=model)
