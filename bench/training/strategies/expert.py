"""``expert:N``: expert parallelism over data parallelism, for the mixture-of-experts models
(:mod:`bench.models.moe`). Every rank is a data-parallel replica on ``batch_size`` samples; each
MoE layer's experts are sharded over groups of N consecutive ranks (member i holds experts
i * E/N ..), each slice replicated on the world/N ranks of the same member index. Tokens move by
uneven all-to-all (:mod:`bench.training.dispatch`); the dense gradients are DDP's, each expert
slice's summed over its replicas (group ``expert_data``) as soon as it is ready, then divided by
the data degree. Calls, memory and routing: docs/training.md (Expert parallelism)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from bench.advise.calls import Call, merged, tally
from bench.advise.layout import Layout, divisors
from bench.training.analytic import Held, numel
from bench.training.strategies.ddp import BUCKET_MB, buckets
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    import torch

    from bench.advise.comm import CommContext
    from bench.advise.evaluate import Job
    from bench.advise.memory import Memory
    from bench.advise.shape import Shape
    from bench.advise.space import Space
    from bench.advise.step import Priced
    from bench.models.base import Batch, ModelSpec
    from bench.models.catalog import ModelInfo
    from bench.training.analytic import Param, Precision

COUNT_BYTES = 8  # the counts exchanged before each dispatch are int64


@dataclass(frozen=True)
class Options:
    degree: Annotated[int, Field(ge=1)] = 2  # ranks per expert-parallel group
    bucket_mb: Annotated[float, Field(gt=0)] = BUCKET_MB  # DDP's buckets of the dense gradients


def is_expert(p: Param) -> bool:
    """Experts are stacked on dim 0: the only 3-D parameters of a MoE model."""
    return len(p.shape) == 3


class ExpertTrainer(Trainer):
    def __init__(self, ctx: TrainContext) -> None:
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        from bench.models.moe import MoE
        from bench.training.dispatch import AllToAll
        from bench.training.trainer import ddp, job_mesh

        n = ctx.opts.degree
        self.ctx, self.dp_degree, self.replica = ctx, ctx.world, ctx.rank
        mesh = job_mesh(ctx.device.type, (ctx.world // n, n), ("expert_data", "expert"))
        self.replicas = mesh["expert_data"].get_group() if ctx.world > n else None
        model = ctx.build_model().to(ctx.device)
        self.layers = [m for m in model.modules() if isinstance(m, MoE)]
        for layer in self.layers:
            held = layer.cfg.experts // n
            layer.first = ctx.rank % n * held
            for name in ("w_gate", "w_up", "w_down"):  # keep this member's slice only
                w = getattr(layer, name).detach()
                setattr(layer, name, nn.Parameter(w[layer.first:layer.first + held].clone()))
            layer.exchange = AllToAll(mesh["expert"].get_group(), n, held)
        names = [k for k, p in model.named_parameters() if p.dim() == 3]
        DDP._set_params_and_buffers_to_ignore_for_model(model, names)
        self.held = model
        self.model = ddp(ctx, model, ctx.opts.bucket_mb)
        self.experts = [p for p in model.parameters() if p.dim() == 3]
        self.works: list[Any] = []
        if self.replicas is not None:  # each slice's gradient summed as soon as it is ready
            for p in self.experts:
                p.register_post_accumulate_grad_hook(self._reduce)
        self.opt = ctx.optimizer(model.parameters())

    def _reduce(self, p: torch.Tensor) -> None:
        import torch.distributed as dist

        self.works.append(dist.all_reduce(p.grad, group=self.replicas, async_op=True))

    def step(self, batch: Batch) -> float | None:
        from bench.training.trainer import loss_step

        return loss_step(self.model, self.ctx.model, self.local_share(batch), self.ctx.device,
                         self.opt, self.ctx.amp, self._experts_reduced)

    def _experts_reduced(self) -> None:
        for w in self.works:
            w.wait()
        self.works.clear()
        for p in self.experts:
            if p.grad is not None:
                p.grad.div_(self.ctx.world)  # the experts' rows came from every replica's loss

    def routing(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """(routed, kept) assignments per expert of each MoE layer in the last forward."""
        return [(m.last.routed, m.last.kept) for m in self.layers if m.last is not None]


def check(opts: Options, model: ModelInfo, world: int, batch: int) -> None:
    experts = getattr(model.config, "experts", None)
    if experts is None:
        raise ValueError(f"expert parallelism needs a mixture-of-experts model (moe-tiny, "
                         f"moe-small); {model.name} is a {model.family}")
    if world % opts.degree:
        raise ValueError(f"expert degree {opts.degree} does not divide the world size {world}")
    if experts % opts.degree:
        raise ValueError(f"expert degree {opts.degree} does not divide the {experts} experts")


def held(model: ModelSpec, opts: Options, ps: list[Param], n: int, r: int) -> Held:
    local = [numel(p.shape) // opts.degree if is_expert(p) else numel(p.shape) for p in ps]
    return Held(local, local, local)


def expert_calls(ctx: CommContext, priced: bool = False) -> list[Call]:
    """The rank's calls per step. Per MoE layer it holds and microbatch: the counts, then
    all_to_alls of ``sent`` and ``received`` rows (:class:`bench.advise.routing.Routing`) of
    width x activation bytes, each once forward and once backward. ``priced``: each at the
    larger of the two, what the busiest rank moves (the exchange ends when it is done)."""
    cfg, lay, b = ctx.shape.model.config, ctx.layout, ctx.bytes
    m, assign = lay.microbatches, ctx.microbatch * ctx.shape.tokens_per_sample * cfg.top_k
    out = []
    for piece in sorted({p.piece for p in ctx.params if is_expert(p)}):
        sent, received = ctx.shape.routing.fractions(piece - 1, cfg.experts, lay.expert,
                                                     cfg.capacity_factor)
        s, r = (round(f * assign) * cfg.embd * b.act for f in (sent, received))
        if priced:
            s = r = max(s, r)
        out += [Call("all_to_all", COUNT_BYTES * cfg.experts, m, "expert", "forward", False),
                *(Call("all_to_all", x, m, "expert", ph, False)
                  for ph in ("forward", "backward") for x in (s, r))]
    dense = [p for p in ctx.params if not is_expert(p)]
    out += tally("all_reduce", (n * b.grad for n in buckets(ctx, dense)), "data", "backward", True)
    if lay.data > lay.expert:
        out += tally("all_reduce", (numel(p.shape) // lay.expert * b.grad
                                    for p in ctx.params if is_expert(p)),
                     "expert_data", "backward", True)
    return merged(out)


def price(job: Job, ctx: CommContext) -> list[Priced]:
    """Every call of the layout on its group, the all-to-alls at the busiest rank's volume."""
    from bench.advise.evaluate import timed

    return timed(job, ctx, expert_calls(ctx, priced=True))


def states(shape: Shape, lay: Layout, batch: int, prec: Precision) -> tuple[Memory, ...]:
    """Model states of data index 0 on each kind of pipeline stage: the largest."""
    from bench.advise.comm import CommContext, representative_stages
    from bench.advise.memory import Memory, held_states, spec

    out = [Memory(held_states(shape, spec("expert", degree=lay.expert), lay.data, 0, lay.tensor,
                              CommContext(shape, lay, batch, pp=pp).my_pieces, prec), pp)
           for pp in representative_stages(shape, lay)]
    return (max(out, key=lambda m: m.total),)


def layouts(space: Space) -> Iterator[tuple[Layout, int]]:
    """Every expert degree > 1 dividing both the data degree and the experts, at every point."""
    experts: Any = getattr(space.model.config, "experts", None)
    if experts is None:
        return
    for pt in space.points:
        if pt.context > 1:  # expert calls see whole sequences (Layout refuses the two)
            continue
        for e in divisors(pt.data):
            if e == 1 or experts % e:
                continue
            for m, sched, v in pt.pipes:
                yield Layout(pt.data, pt.tensor, pt.pipeline, dp="expert", microbatches=m,
                             schedule=sched, stages_per_rank=v, bucket_mb=space.bucket_mb,
                             expert=e), pt.batch


register(Strategy(
    "expert", "Expert parallelism x data parallelism: MoE experts sharded over groups of "
    "degree ranks, tokens moved by uneven all-to-all", ExpertTrainer, held, expert_calls,
    lambda opts, world: Layout(data=world, dp="expert", bucket_mb=opts.bucket_mb,
                               expert=opts.degree),
    Options, short="degree", label=lambda o: f"ep={o.degree}", check=check, layouts=layouts,
    layout_label=lambda lay: [f"ep={lay.expert}"], states=states, price=price, order=8,
    needs_shape=True))
