"""``ps:N``: the synchronous parameter server of :mod:`bench.training.strategies.ps`.

The last N of W ranks are servers, the first W - N workers. Parameters go to servers as whole
tensors, largest first to the least-loaded server (:func:`bench.training.analytic.greedy_owners`),
so server s holds Psi_s elements (Psi = sum over s). Per step, after backward, a worker pushes
the gradients of each server's parameters in one flat buffer (N sends, Psi gradients in all)
and pulls each server's updated parameters (N receives, Psi parameters); server s receives
W - N buffers of Psi_s gradients and sends W - N of Psi_s parameters. Gradients travel at the
question's gradient size (fp32 in this codebase's strategies, also under autocast: the master
gradients), parameters at its parameter size. Nothing overlaps: the push starts when backward
ends and the next forward waits for the pull. Timing (incast on a server's NIC included):
:meth:`bench.advise.timing.Timer.ps`.
"""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm, numel
from bench.training.analytic import greedy_owners


def shard_elements(ctx: CommContext) -> list[int]:
    """Elements of each server's shard (``Psi_s``), in server order."""
    n = ctx.layout.servers
    sizes = [numel(p) for p in ctx.params]
    out = [0] * n
    for x, o in zip(sizes, greedy_owners(sizes, n)):
        out[o] += x
    return out


@comm("ps")
def ps(ctx: CommContext) -> list[Call]:
    b, shards = ctx.bytes, shard_elements(ctx)
    counts: dict[tuple[str, int], int] = {}
    if ctx.server is None:  # a worker: one push and one pull per server
        for n in shards:
            for op, size in (("send", n * b.grad), ("recv", n * b.param)):
                counts[op, size] = counts.get((op, size), 0) + 1
    else:  # server s: one receive and one send per worker
        n = shards[ctx.server]
        counts = {("recv", n * b.grad): ctx.layout.data, ("send", n * b.param): ctx.layout.data}
    return [Call(op, size, k, "server", "step", False) for (op, size), k in counts.items()]
