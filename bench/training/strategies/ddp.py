"""``ddp``: DistributedDataParallel, each rank a replica on ``batch_size`` samples, its gradient
buckets averaged by DDP's AllReduce (``hook: default``), compressed to fp16/bf16 (DDP's hooks),
or run through a commbench AllReduce schedule on the torch p2p transport (``hook: ring``, ...).
Its buckets and their calls (:func:`buckets`): docs/advise.md (Communication per step)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bench.advise.calls import Call, tally
from bench.advise.layout import Layout
from bench.advise.space import data_layouts
from bench.training.analytic import numel, replicated
from bench.training.rules import accelerator_build
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.advise.comm import CommContext
    from bench.models.catalog import ModelInfo
    from bench.training.analytic import Param

COMPRESSED = {"fp16": 2, "bf16": 2}  # DDP's compression hooks and their element size
BUCKET_MB = 25.0


@dataclass(frozen=True)
class Options:
    hook: str = "default"  # default | fp16 | bf16 | a commbench all_reduce algorithm (ring, ...)
    bucket_mb: Annotated[float, Field(gt=0)] = BUCKET_MB  # gradient bucket cap

    def __post_init__(self) -> None:
        from kernels.algorithm import algorithms_of

        valid = ["default", *COMPRESSED,
                 *(a.name for a in algorithms_of("all_reduce") if not a.is_vendor)]
        if self.hook not in valid:
            raise ValueError(f"unknown ddp hook {self.hook!r}; valid: {', '.join(valid)}")


def bf16_hook_allowed() -> bool:
    """DDP's own condition for registering ``bf16_compress_hook`` (``_check_comm_hook`` in
    torch/nn/parallel/distributed.py): a CUDA/ROCm build with NCCL >= 2.10, or XPU with XCCL. It
    tests the build, not the backend: gloo reduces bf16 on CPU, so ``backend: gloo`` runs it too.
    A CPU-only build has neither NCCL nor XCCL, which is known without importing torch; only an
    accelerator build imports torch to ask."""
    if not accelerator_build():
        return False
    import torch
    import torch.distributed as dist

    cuda_build = torch.version.cuda is not None or torch.version.hip is not None
    nccl = cuda_build and dist.is_nccl_available() and torch.cuda.nccl.version() >= (2, 10)
    xccl = dist.is_xccl_available() and torch.xpu.is_available()
    return bool(nccl or xccl)


def check(opts: Options, model: ModelInfo, world: int, batch: int) -> None:
    if opts.hook == "bf16" and not bf16_hook_allowed():
        raise ValueError("hook bf16 needs CUDA and NCCL: DDP takes bf16_compress_hook only in a "
                         "CUDA build of torch with NCCL >= 2.10; use fp16 on this one")


def build(ctx: TrainContext) -> Trainer:
    from bench.training.hooks import install_hook
    from bench.training.trainer import ModelTrainer, ddp

    model = ctx.build_model().to(ctx.device)
    wrapped = ddp(ctx, model, ctx.opts.bucket_mb)
    install_hook(wrapped, ctx.opts.hook, ctx.device, ctx.opts.hook in COMPRESSED)
    return ModelTrainer(ctx, wrapped, ctx.optimizer(wrapped.parameters()), ctx.world, ctx.rank,
                        held=model)


def buckets(ctx: CommContext, params: Sequence[Param] | None = None) -> list[int]:
    """Elements per bucket, in the order they are reduced (of ``params``, default the rank's)."""
    cap = int(ctx.layout.bucket_mb * 2**20)
    out, size, elems = [], 0, 0
    for p in reversed(ctx.params if params is None else params):
        n = numel(p.shape)
        size, elems = size + n * ctx.bytes.grad, elems + n
        if size >= cap:
            out.append(elems)
            size, elems = 0, 0
    return [*out, elems] if elems else out


def gradient_calls(ctx: CommContext) -> list[Call]:
    """DDP's bucketed gradient all_reduces (ddp, and zero1's gradients)."""
    hook = ctx.layout.hook
    item = COMPRESSED.get(hook, ctx.bytes.grad)
    alg = None if hook in ("default", *COMPRESSED) else hook
    return tally("all_reduce", (n * item for n in buckets(ctx)), "data", "backward", True, alg,
                 item)


register(Strategy(
    "ddp", "DistributedDataParallel with a choice of gradient AllReduce (DDP's, fp16/bf16, "
    "commbench's)", build, replicated, gradient_calls,
    lambda opts, world: Layout(data=world, dp="ddp", bucket_mb=opts.bucket_mb, hook=opts.hook),
    Options, short="hook", label=lambda o: o.hook if o.hook != "default" else "", check=check,
    layouts=lambda space: data_layouts(space, "ddp", alone=True),
    layout_label=lambda lay: [lay.hook] if lay.hook != "default" else [], order=0, table="ddp"))
