"""``tensor``: Megatron pairs as :mod:`bench.training.strategies.tensor` shards them (DTensor
``ColwiseParallel`` / ``RowwiseParallel`` over the model's ``tp_plan``).

Forward: every row-parallel Linear all-reduces its partial outputs (samples x tokens x
out_features). Backward: every column-parallel Linear all-reduces the partial gradient of its
replicated input (samples x tokens x in_features), except a layer fed by the model's raw input
(piece 0 of the MLP), whose input needs no gradient. q, k and v are three column-parallel layers
on one input: three backward all_reduces per attention block. Per microbatch when pipelined.
These calls sit on the critical path: nothing overlaps them.
"""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm


@comm("tensor")
def tensor(ctx: CommContext) -> list[Call]:
    m, tokens, act = ctx.layout.microbatches, ctx.shape.tokens_per_sample, ctx.bytes.act
    rows = ctx.microbatch * tokens * act
    sizes: dict[tuple[str, int], int] = {}
    mine = ctx.my_pieces
    for piece, lin in ctx.shape.linears:
        if piece not in mine:
            continue
        if lin.style == "rowwise":
            key = ("forward", rows * lin.out_features)
        elif piece != 0:
            key = ("backward", rows * lin.in_features)
        else:
            continue
        sizes[key] = sizes.get(key, 0) + m
    return [Call("all_reduce", n, k, "tensor", phase, False) for (phase, n), k in sizes.items()]
