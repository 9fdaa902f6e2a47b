"""``pipeline``: torch.distributed.pipelining between stages, per microbatch.

Each of the rank's stages s sends its output forward (to s + 1) unless it is the last stage
and the gradient of its input backward (to s - 1) unless it is the first; it receives the
mirror images. One message per microbatch and boundary, of microbatch x the boundary
activation's elements (``Shape.boundary_elements``): the same for GPipe, 1F1B and interleaved
1F1B; interleaving adds boundaries (v stages per rank). Tensor-parallel ranks each send the full
activation. Sends and receives wait on the critical path (the schedule blocks on them).
"""

from __future__ import annotations

from bench.advise.calls import Call
from bench.advise.comm import CommContext, comm


@comm("pipeline")
def pipeline(ctx: CommContext) -> list[Call]:
    m, last = ctx.layout.microbatches, ctx.layout.stages - 1
    starts, unit = ctx.stage_starts, ctx.microbatch * ctx.bytes.act
    out = []
    for s in ctx.my_stages:
        if s != last:  # output forward, its gradient back
            n = unit * ctx.shape.boundary_elements(starts[s + 1])
            out += [Call("send", n, m, "pipeline", "forward", False),
                    Call("recv", n, m, "pipeline", "backward", False)]
        if s != 0:  # input from the previous stage, its gradient back to it
            n = unit * ctx.shape.boundary_elements(starts[s])
            out += [Call("recv", n, m, "pipeline", "forward", False),
                    Call("send", n, m, "pipeline", "backward", False)]
    return out
