"""Multi-channel rail-aligned ring AllReduce (NCCL's ring over k channels)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """k rings at once, 2(p-1) steps of k messages of n/(kp) elements per rank: each step at
    the pace of its dearest message (k of them share a rank's intra port; the k node-crossing
    flows of a node leave from k ranks, each on its share of the node's NICs):
    (p-1)(C_max + γ n/p) + (p-1) C_max."""
    k = rings.channels(x.net.placed.node_sizes)
    return x.need(equal=False, divides=k * x.p) or x.channel_rings(k, x.p - 1, x.p - 1)


@algorithm("ring_channels", shape=rings.CHANNEL_CHUNKS,
           closed=_closed)
def ring_channels(problem: Problem, b: StepBuilder) -> None:
    """k rings at once, each on 1/k of the buffer and each leaving every node from a different
    rank (its rail): reduce-scatter then all-gather, 2(p-1) steps.

    k (``kernels.rings.channels``): 1 on one node, else the ranks of the largest node, at most
    8. The buffer is cut into k*p chunks; channel c runs the ring algorithm on chunks
    c*p..c*p+p-1 over its own ring order (``kernels.rings.channel_ring``: inside each node from
    local index c+1 round to c, so it crosses to the next node from local index c mod l). Every
    step carries all k channels' messages, so a node's k crossing flows leave through k ranks
    and their NICs where the single ring sends one. Bytes sent per rank: 2(p-1)/p * n, as the
    ring (k messages of n/(kp) per step); between nodes a rank sends 2(p-1) n/(kp) per channel
    it leaves its node in (one, with k = l).
    """
    k, p, nodes = rings.channels_of(problem.topology), problem.world, problem.topology.nodes()
    chunks = split(problem.count, k * p)
    scatter, gather = rings.open_steps(b, p - 1), rings.open_steps(b, p - 1)
    for c in range(k):  # ring c on chunks c p .. c p + p - 1
        ring = rings.channel_ring(nodes, c)
        rings.reduce_scatter(b, ring, chunks[c * p:(c + 1) * p], scatter)
        rings.all_gather(b, ring, chunks[c * p:(c + 1) * p], gather)
