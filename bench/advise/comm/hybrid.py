"""``hybrid``: tensor parallelism inside groups of ``tensor_degree`` ranks and FSDP2 (zero3)
across them, as :mod:`bench.training.strategies.hybrid` builds it: the tensor model's calls
plus zero3's calls on the tensor-parallel shards, over the data group."""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm
from bench.advise.comm.fsdp import zero3
from bench.advise.comm.tensor import tensor


@comm("hybrid")
def hybrid(ctx: CommContext) -> list[Call]:
    return [*tensor(ctx), *(zero3(ctx) if ctx.layout.data > 1 else [])]
