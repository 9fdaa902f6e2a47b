"""``ps:N``: a synchronous parameter server over torch.distributed point-to-point. The last N
ranks are servers holding whole tensors (:func:`bench.training.analytic.greedy_owners`); every
other rank is a worker that pushes its flat gradients to every server and pulls the updated
parameters back, every step: docs/training.md (Parameter server), docs/advise.md (its price)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bench.advise.calls import Call, merged
from bench.advise.layout import Layout
from bench.training.analytic import Acts, Held, greedy_owners, numel
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    import torch
    import torch.distributed as dist
    from torch import nn

    from bench.advise.comm import CommContext
    from bench.advise.evaluate import Job
    from bench.advise.memory import Memory
    from bench.advise.shape import Shape
    from bench.advise.space import Space
    from bench.advise.step import Priced
    from bench.models.base import Batch, ModelSpec
    from bench.models.catalog import ModelInfo
    from bench.training.analytic import Param, Precision


@dataclass(frozen=True)
class Options:
    servers: Annotated[int, Field(ge=1)] = 1  # parameter-server ranks (the last ones)


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    import torch

    return torch.cat([t.detach().reshape(-1) for t in tensors])


def _unflat(flat: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    return [x.view_as(t) for x, t in zip(flat.split([t.numel() for t in like]), like)]


def _wait(reqs: list[dist.Work | None]) -> None:
    for r in reqs:
        if r is not None:
            r.wait()


class PSTrainer(Trainer):
    def __init__(self, ctx: TrainContext) -> None:
        from torch import nn

        self.ctx = ctx
        n = ctx.opts.servers
        self.workers = list(range(ctx.world - n))
        self.servers = list(range(ctx.world - n, ctx.world))
        self.dp_degree = len(self.workers)
        self.is_server = ctx.rank in self.servers
        self.replica = 0 if self.is_server else ctx.rank
        model = ctx.build_model().to(ctx.device)
        params = list(model.parameters())
        owners = greedy_owners([p.numel() for p in params], n)
        # the parameters of each server, in model order
        self.shards = [[p for p, o in zip(params, owners) if o == s] for s in range(n)]
        if self.is_server:
            mine = self.shards[self.servers.index(ctx.rank)]
            self.held: nn.Module = nn.ParameterList(mine)  # the rest of the model is dropped
            self.mine = mine
            self.opt: torch.optim.Optimizer | None = ctx.optimizer(mine)
        else:
            self.held, self.model, self.opt = model, model, None

    def step(self, batch: Batch) -> float | None:
        return self._serve() if self.is_server else self._work(self.local_share(batch))

    def _work(self, batch: Batch) -> float:
        import torch
        import torch.distributed as dist

        dev, amp = self.ctx.device, self.ctx.amp
        for p in self.model.parameters():
            p.grad = None
        loss = amp.loss(self.ctx.model.loss, self.model(batch.inputs.to(dev)), batch.targets.to(dev))
        loss.backward()
        amp.unscale(self.model.parameters())
        pushed = [_flat([p.grad for p in shard]) for shard in self.shards]
        pulled = [torch.empty_like(g) for g in pushed]
        reqs = [dist.isend(g, dst) for g, dst in zip(pushed, self.servers)]
        reqs += [dist.irecv(b, src) for b, src in zip(pulled, self.servers)]
        _wait(reqs)
        with torch.no_grad():
            for shard, flat in zip(self.shards, pulled):
                for p, new in zip(shard, _unflat(flat, shard)):
                    p.copy_(new)
        return float(loss.detach()) / amp.scale

    def _serve(self) -> None:
        import torch
        import torch.distributed as dist

        assert self.opt is not None
        self.opt.zero_grad(set_to_none=True)
        size = sum(p.numel() for p in self.mine)
        grads = [torch.empty(size, device=self.ctx.device) for _ in self.workers]  # fp32 master grads
        _wait([dist.irecv(g, src) for g, src in zip(grads, self.workers)])
        avg = sum(grads[1:], grads[0]) / len(self.workers)
        for p, g in zip(self.mine, _unflat(avg, self.mine)):
            p.grad = g
        self.opt.step()
        params = _flat(self.mine)
        _wait([dist.isend(params, dst) for dst in self.workers])

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt] if self.opt is not None else []


def check(opts: Options, model: ModelInfo, world: int, batch: int) -> None:
    if opts.servers >= world:
        raise ValueError(f"ps needs at least one worker: {opts.servers} server rank(s) of "
                         f"{world} leave none")


def held(model: ModelSpec, opts: Options, ps: list[Param], n: int, r: int) -> Held:
    full = [numel(p.shape) for p in ps]
    workers = n - opts.servers
    if r < workers:
        return Held(full, full, [], 2 * sum(full))
    mine = [x for x, o in zip(full, greedy_owners(full, opts.servers)) if o == r - workers]
    return Held(mine, mine, mine, (workers + 1) * sum(mine))


def shard_elements(ctx: CommContext) -> list[int]:
    """Elements of each server's shard (``Psi_s``), in server order."""
    n = ctx.layout.servers
    sizes = [numel(p.shape) for p in ctx.params]
    out = [0] * n
    for x, o in zip(sizes, greedy_owners(sizes, n)):
        out[o] += x
    return out


def calls(ctx: CommContext) -> list[Call]:
    b, shards = ctx.bytes, shard_elements(ctx)
    if ctx.server is None:  # a worker: one push and one pull per server
        ops, k = [x for n in shards for x in (("send", n * b.grad), ("recv", n * b.param))], 1
    else:  # server s: one receive and one send per worker
        n = shards[ctx.server]
        ops, k = [("recv", n * b.grad), ("send", n * b.param)], ctx.layout.data
    return merged(Call(op, size, k, "server", "step", False) for op, size in ops)


def price(job: Job, ctx: CommContext) -> list[Priced]:
    """A worker's push and pull, each priced as one exchange (:meth:`Timer.ps`)."""
    from bench.advise.step import Priced

    shards, b = shard_elements(ctx), job.bytes
    push, pull = job.timer.ps(ctx.layout.data, [n * b.grad for n in shards],
                              [n * b.param for n in shards])
    total = sum(shards)
    return [Priced(Call("send", total * b.grad, 1, "server", "step", False), push, "p2p", "p2p"),
            Priced(Call("recv", total * b.param, 1, "server", "step", False), pull, "p2p", "p2p")]


def states(shape: Shape, lay: Layout, batch: int, prec: Precision) -> tuple[Memory, ...]:
    """Worker 0 and server 0 (the largest shard; -1 marks the server, which runs no forward)."""
    from bench.advise.comm import CommContext
    from bench.advise.memory import Memory, held_states, spec

    pieces = CommContext(shape, lay, batch).my_pieces
    return tuple(Memory(held_states(shape, spec("ps", servers=lay.servers), lay.world, r,
                                    lay.tensor, pieces, prec), st)
                 for r, st in ((0, 0), (lay.data, -1)))


def layouts(space: Space) -> Iterator[tuple[Layout, int]]:
    n = 1
    while 2 * n <= space.world:
        if space.global_batch % (space.world - n) == 0:
            yield (Layout(data=space.world - n, dp="ps", servers=n),
                   space.global_batch // (space.world - n))
        n *= 2


register(Strategy(
    "ps", "Synchronous parameter server: workers push gradients and pull parameters (p2p)",
    PSTrainer, held, calls, lambda opts, world: Layout(data=world - opts.servers, dp="ps",
                                                       servers=opts.servers),
    Options, short="servers", label=lambda o: f"servers={o.servers}", check=check,
    acts=lambda model, opts, world, rank: Acts(forward=rank < world - opts.servers),
    layouts=layouts, layout_label=lambda lay: [f"servers={lay.servers}"], states=states,
    price=price, order=7))
