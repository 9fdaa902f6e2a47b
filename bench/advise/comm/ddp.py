"""``ddp``: DistributedDataParallel's gradient AllReduce, one call per bucket, in backward.

Buckets as torch 2.13 builds them (``torch/nn/parallel/distributed.py``,
``_BucketCapacityConfig``): commbench passes ``bucket_cap_mb`` explicitly, so the first bucket's
cap equals the others' (the 1 MiB first bucket applies only when bucket_cap_mb is left unset).
The first step runs with one bucket (find_unused_parameters off); the Reducer then rebuilds
them in the order gradients became ready, which for a chain of pieces is the reverse parameter
order. Parameters are added to the open bucket until its bytes reach the cap
(``int(bucket_mb * 2**20)``, gradients at their element size); the bucket then closes, so a
bucket may exceed the cap by its last tensor. Each bucket is one all_reduce of its flat buffer;
the fp16/bf16 compression hooks reduce it as 2-byte elements; a commbench algorithm hook runs
the bucket through that all_reduce schedule (sends and receives). Buckets overlap with backward.
"""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm, numel

COMPRESSED = {"fp16": 2, "bf16": 2}


def buckets(ctx: CommContext) -> list[int]:
    """Elements per bucket, in the order they are reduced."""
    cap = int(ctx.layout.bucket_mb * 2**20)
    out, size, elems = [], 0, 0
    for p in reversed(ctx.params):
        n = numel(p)
        size, elems = size + n * ctx.bytes.grad, elems + n
        if size >= cap:
            out.append(elems)
            size, elems = 0, 0
    return [*out, elems] if elems else out


def gradient_calls(ctx: CommContext) -> list[Call]:
    hook = ctx.layout.hook
    item = COMPRESSED.get(hook, ctx.bytes.grad)
    alg = None if hook in ("default", *COMPRESSED) else hook
    sizes: dict[int, int] = {}
    for n in buckets(ctx):
        sizes[n] = sizes.get(n, 0) + 1
    return [Call("all_reduce", n * item, k, "data", "backward", True, alg, item)
            for n, k in sizes.items()]


@comm("ddp")
def ddp(ctx: CommContext) -> list[Call]:
    return gradient_calls(ctx)
