"""Ring AllReduce: reduce-scatter ring, then all-gather ring (Patarasuk & Yuan; NCCL's ring)."""

from __future__ import annotations

import numpy as np

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import node_order
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """2(p-1) steps of B = n/p elements, every step at the pace of the ring's dearest hop (the
    ranks on both sides of it pay it every step): (p-1)(C_max + γB) + (p-1) C_max."""
    why = x.need(equal=False, divides=x.p)
    if why:
        return why
    cmax = x.ring_max(x.b)
    t = (x.p - 1) * (2 * cmax + x.gamma * x.b)
    return estimate(t, 2 * (x.p - 1), 2 * (x.p - 1) * x.b, 2 * (x.p - 1) * x.b * (x.N > 1))


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (chunk x is atom x), generated with numpy for the evaluator: one
    ring in node order, its reduce-scatter steps then its all-gather steps."""
    ring = np.asarray([node_order(pr.topology)], np.int64)
    atom = np.arange(pr.world, dtype=np.int64)[None, :]
    return Compiled(pr.world, pr.count, (*rings.ring_steps(ring, atom, False),
                                         *rings.ring_steps(ring, atom, True)))


@algorithm("ring", shape=BLOCKS.generated(_generate), closed=_closed)
def ring(problem: Problem, b: StepBuilder) -> None:
    """Reduce-scatter ring then all-gather ring over p chunks: 2(p-1) steps.

    Bytes sent per rank: 2(p-1)/p * n (exactly: twice the sum of the p-1 chunks it forwards, each
    chunk n/p rounded to whole elements). Ranks are ordered node by node, so the ring crosses
    between nodes only once per node.
    """
    order, chunks = node_order(problem.topology), split(problem.count, problem.world)
    p = len(order)
    for gather in (False, True):  # reduce-scatter, then all-gather
        for s in range(p - 1):  # member i passes chunk i - s (reducing) or i + 1 - s on
            st = b.step()
            for i in range(p):
                b.move(order[i], order[(i + 1) % p], chunks[(i + gather - s) % p],
                       reduce=not gather, step=st)
