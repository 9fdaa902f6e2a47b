"""``zero1``: DDP's bucketed gradient AllReduce (as :mod:`.ddp`), then
ZeroRedundancyOptimizer's step: each rank updates the parameters it owns and broadcasts them,
one broadcast per parameter tensor from its owner (``parameters_as_bucket_view`` off, torch's
default), every rank taking part in every broadcast. The broadcasts follow the optimizer step
and overlap nothing."""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm, numel
from bench.advise.comm.ddp import gradient_calls


@comm("zero1")
def zero1(ctx: CommContext) -> list[Call]:
    sizes: dict[int, int] = {}
    for p in ctx.params:
        n = numel(p) * ctx.bytes.param
        sizes[n] = sizes.get(n, 0) + 1
    return [*gradient_calls(ctx),
            *(Call("broadcast", n, k, "data", "step", False) for n, k in sizes.items())]
