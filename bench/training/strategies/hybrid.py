"""``hybrid``: a 2-D mesh, data x tensor parallel (torchtitan's 2-D layout): Megatron tensor
parallelism inside groups of ``tensor_degree`` consecutive ranks, FSDP2 (ZeRO-3) across the
groups; ranks ``g*t .. g*t+t-1`` form replica ``g``. As a layout: ``dp=N/t zero3 tp=t``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bench.advise.comm import tensor_calls
from bench.advise.layout import Layout
from bench.training.analytic import Acts, Held, fsdp_held, tp_local, tp_plan_of
from bench.training.rules import check_degree
from bench.training.strategies.fsdp import fsdp_calls
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    from bench.advise.calls import Call
    from bench.advise.comm import CommContext
    from bench.models.base import ModelSpec
    from bench.models.catalog import ModelInfo
    from bench.training.analytic import Param


@dataclass(frozen=True)
class Options:
    tensor_degree: Annotated[int, Field(ge=1)] = 2  # ranks per tensor-parallel group


def build(ctx: TrainContext) -> Trainer:
    from torch.distributed.fsdp import fully_shard

    from bench.training.strategies.tensor import apply_plan
    from bench.training.trainer import ModelTrainer, job_mesh

    t = ctx.opts.tensor_degree
    mesh = job_mesh(ctx.device.type, (ctx.world // t, t), ("dp", "tp"))
    model = ctx.build_model().to(ctx.device)
    apply_plan(model, ctx.model, mesh["tp"])
    for piece in model.pieces:
        fully_shard(piece, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return ModelTrainer(ctx, model, ctx.optimizer(model.parameters()), ctx.world // t, ctx.rank // t)


def check(opts: Options, model: ModelInfo, world: int, batch: int) -> None:
    if world % opts.tensor_degree:
        raise ValueError(f"tensor_degree {opts.tensor_degree} does not divide the world size")
    check_degree(model, opts.tensor_degree)


def held(model: ModelSpec, opts: Options, ps: list[Param], n: int, r: int) -> Held:
    t = opts.tensor_degree
    plan = tp_plan_of(model)
    return fsdp_held(ps, n // t, r // t, [tp_local(plan, p, t) for p in ps], reshard=True)


def calls(ctx: CommContext) -> list[Call]:
    return [*tensor_calls(ctx), *(fsdp_calls(ctx, reshard=True) if ctx.layout.data > 1 else [])]


register(Strategy(
    "hybrid", "2-D data x tensor parallel: TP within groups of tensor_degree ranks, FSDP2 "
    "across them", build, held, calls,
    lambda opts, world: Layout(data=world // opts.tensor_degree, dp="zero3",
                               tensor=opts.tensor_degree),
    Options, short="tensor_degree", label=lambda o: f"tp={o.tensor_degree}", check=check,
    acts=lambda model, opts, world, rank: Acts(tensor=opts.tensor_degree), order=6,
    table="hybrid:8", needs_shape=True))
