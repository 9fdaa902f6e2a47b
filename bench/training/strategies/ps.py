"""``ps:N``: a synchronous parameter server over torch.distributed point-to-point.

Ranks: the last N of the W ranks are servers, the first W - N are workers. Worker ``w`` is
data-parallel replica ``w`` on ``batch_size`` samples, so the global batch is
``batch_size * (W - N)`` (the servers see no data) and the update equals one step of the
single-process reference on it. Parameters go to servers as whole tensors, largest first to the
least-loaded server (:func:`bench.training.analytic.greedy_owners`, ZeroRedundancyOptimizer's
rule); every rank builds the same model from the seed, so no initial broadcast is needed.

One step: each worker runs forward and backward on its share, flattens the gradients of each
server's parameters (in model order) into one buffer and ``isend``\\ s it there; each server
``irecv``\\ s one buffer from every worker, sums them in worker order, divides by W - N, sets the
result as its parameters' gradients and steps Adam; then it ``isend``\\ s its updated parameters,
flat, to every worker, which ``irecv``\\ s them and copies them in before the next step.

Communication per step, counted as ``send`` and ``recv`` (element size e, 4 in fp32; Psi_s the
elements on server s, Psi = sum of Psi_s): a worker pushes e*Psi bytes of gradients in N sends
and pulls e*Psi bytes of parameters in N receives; server s receives e*Psi_s*(W-N) bytes in W-N
receives and sends e*Psi_s*(W-N) bytes in W-N sends. Memory: a worker holds the whole model
and its gradients and no optimizer state; server s holds its parameters, their averaged
gradients and their Adam state (``bench.training.analytic``, rule ``ps``).
"""

from __future__ import annotations

import functools
import operator

import torch
import torch.distributed as dist
from torch import nn

from bench.models.base import Batch
from bench.training.analytic import greedy_owners
from bench.training.strategy import TrainContext, Trainer, strategy


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def _unflat(flat: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
    out, at = [], 0
    for t in like:
        out.append(flat[at:at + t.numel()].view_as(t))
        at += t.numel()
    return out


def _wait(reqs: list[dist.Work | None]) -> None:
    for r in reqs:
        if r is not None:
            r.wait()


class PSTrainer(Trainer):
    def __init__(self, ctx: TrainContext) -> None:
        self.ctx = ctx
        n = ctx.spec.servers
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
        assert self.opt is not None
        self.opt.zero_grad(set_to_none=True)
        size = sum(p.numel() for p in self.mine)
        grads = [torch.empty(size, device=self.ctx.device) for _ in self.workers]  # fp32 master grads
        _wait([dist.irecv(g, src) for g, src in zip(grads, self.workers)])
        avg = functools.reduce(operator.add, grads) / len(self.workers)
        for p, g in zip(self.mine, _unflat(avg, self.mine)):
            p.grad = g
        self.opt.step()
        params = _flat(self.mine)
        _wait([dist.isend(params, dst) for dst in self.workers])
        return None

    def modules(self) -> list[nn.Module]:
        return [self.held]

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt] if self.opt is not None else []


@strategy("ps")
def build(ctx: TrainContext) -> Trainer:
    """Synchronous parameter server: workers push gradients and pull parameters (p2p)."""
    return PSTrainer(ctx)
