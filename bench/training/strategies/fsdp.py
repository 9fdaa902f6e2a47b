"""``zero2`` and ``zero3``: FSDP2 ``fully_shard`` on every model piece and on the root; zero3
reshards parameters after forward, zero2 keeps them unsharded to the end of backward. Both shard
gradients and optimizer state in dim-0 chunks of ceil(d0 / N) rows, one unit per piece.
Communication and memory: docs/advise.md and docs/training.md (Memory model)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bench.advise.calls import Call
from bench.advise.layout import Layout
from bench.advise.space import Space, data_layouts
from bench.training.analytic import Held, chunk_rows, fsdp_held
from bench.training.strategy import NoOptions, Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    from collections.abc import Iterator

    from bench.advise.comm import CommContext
    from bench.models.base import ModelSpec
    from bench.training.analytic import Param


def _build(ctx: TrainContext, reshard: bool) -> Trainer:
    from torch.distributed.fsdp import fully_shard

    from bench.training.trainer import ModelTrainer, job_mesh

    model = ctx.build_model().to(ctx.device)
    # the mesh names our device: fully_shard's default mesh is on torch's accelerator (CUDA
    # whenever a GPU exists), which would move a gloo/CPU run's parameters onto the GPU
    mesh = job_mesh(ctx.device.type, (ctx.world,))
    for piece in model.pieces:
        fully_shard(piece, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), ctx.world, ctx.rank)


def unit_elements(ctx: CommContext) -> dict[int, int]:
    """Padded elements of each unit (piece) the rank holds, over the data group (its data x
    context ranks)."""
    n = ctx.layout.replicas
    out: dict[int, int] = {}
    for p in ctx.params:
        out[p.piece] = out.get(p.piece, 0) + n * chunk_rows(p.shape[0], n, 0) * math.prod(
            p.shape[1:])
    return out


def fsdp_calls(ctx: CommContext, reshard: bool) -> list[Call]:
    b = ctx.bytes
    out = []
    for elems in unit_elements(ctx).values():
        out.append(Call("all_gather", elems * b.param, 1, "data", "forward", True))
        if reshard:
            out.append(Call("all_gather", elems * b.param, 1, "data", "backward", True))
        out.append(Call("reduce_scatter", elems * b.grad, 1, "data", "backward", True))
    return out


def _family(name: str, stage: int, summary: str) -> Strategy:
    reshard = stage == 3

    def held(model: ModelSpec, opts: NoOptions, ps: list[Param], n: int, r: int) -> Held:
        return fsdp_held(ps, n, r, [p.shape for p in ps], reshard)

    def layouts(space: Space) -> Iterator[tuple[Layout, int]]:
        # zero2 beside a pipeline: torch.distributed.pipelining (2.13, stage.py) keeps FSDP's
        # units gathered from the first micro-batch's forward to the stage's last backward
        # (``set_reshard_after_backward(False)``) and reduce-scatters each stage's gradients
        # once, after its last micro-batch (``perform_reduce_grad``): the calls of
        # :func:`fsdp_calls` once per step; the gradients in between are held whole
        # (:func:`bench.advise.memory.accumulated`). zero3 would re-gather every unit for
        # every micro-batch's forward, which is not priced: no pipeline.
        return data_layouts(space, name, pipeline=not reshard)

    return Strategy(name, summary, lambda ctx: _build(ctx, reshard), held,
                    lambda ctx: fsdp_calls(ctx, reshard),
                    lambda opts, world: Layout(data=world, dp=name), layouts=layouts,
                    zero=stage, order=stage, table=name)


register(_family("zero2", 2, "ZeRO-2: FSDP2 without reshard after forward (gradients and "
                 "optimizer state sharded)"),
         _family("zero3", 3, "ZeRO-3: FSDP2 full shard (parameters, gradients and optimizer "
                 "state sharded)"))
