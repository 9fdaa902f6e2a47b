"""Multi-channel rail-aligned ring all_gather (NCCL's ring over k channels)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """k rings at once, p-1 steps of k messages of n/(kp) elements per rank, each step at the
    pace of its dearest message: (p-1) C_max."""
    k = rings.channels(x.net.placed.node_sizes)
    return x.need(equal=False, divides=k * x.p) or x.channel_rings(k, 0, x.p - 1)


@algorithm("ring_channels", "all_gather", shape=rings.CHANNEL_GATHER, closed=_closed,
           sent=all_but_own)
def ring_channels(problem: Problem, b: StepBuilder) -> None:
    """k rings at once, each carrying piece c of every block and leaving every node from a
    different rank (its rail): p-1 steps.

    k (``kernels.rings.channels``): 1 on one node, else the ranks of the largest node, at most
    8. Each block of n/p is cut into k pieces; channel c forwards the pieces c around its own
    ring order (``kernels.rings.channel_ring``: it crosses to the next node from local index
    c mod l), all channels in the same steps. Elements sent per rank: (p-1) * n/p, the optimum,
    in k messages a step; between nodes, (p-1) n/(kp) per channel it leaves its node in.
    """
    k, nodes, pieces = rings.channels_of(problem.topology), problem.topology.nodes(), \
        rings.pieces(problem)
    steps = rings.open_steps(b, problem.world - 1)
    for c in range(k):  # chunk x of ring c: piece c of the block of the member before x
        ring = rings.channel_ring(nodes, c)
        rings.all_gather(b, ring, [pieces[ring[x - 1] * k + c] for x in range(len(ring))], steps)
