"""``zero2`` and ``zero3``: FSDP2 ``fully_shard`` on every piece (the root holds no parameters
of its own, so it adds no group).

Per unit (piece) FSDP2 issues one all_gather of the unit's parameters (all tensors of the unit
in one flat buffer) and one reduce_scatter of its gradients. Each parameter is padded to
``ceil(d0 / N)`` rows per rank on dim 0, so a call carries ``N * sum(ceil(d0 / N) * inner)``
elements (:func:`bench.training.analytic.chunk_rows`). zero3 reshards after forward and gathers
every unit again in backward (two all_gathers per unit); zero2 keeps them gathered (one).
Forward gathers are prefetched under the previous unit's compute and backward ones under the
next's; reduce_scatters run under the backward of earlier units.
"""

from __future__ import annotations

import math

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm
from bench.training.analytic import chunk_rows


def unit_elements(ctx: CommContext) -> dict[int, int]:
    """Padded elements of each unit (piece) the rank holds, over the data group."""
    n = ctx.layout.data
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


@comm("zero2")
def zero2(ctx: CommContext) -> list[Call]:
    return fsdp_calls(ctx, reshard=False)


@comm("zero3")
def zero3(ctx: CommContext) -> list[Call]:
    return fsdp_calls(ctx, reshard=True)
