"""Direct all_gather: one step in which every rank sends its block to every other rank."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import INTER, SPINE, Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled, messages
from kernels.phases import node_order
from kernels.schedule import StepBuilder


def one_step(x: Ctx, b: float) -> float:
    """Every rank sends one message of ``b`` bytes to every other rank, in offset order: the
    dearest message is the last one posted (o (p-1)) of the dearest class present, every class
    sharing its resources with all the step's flows of that class."""
    p, l = x.p, x.l  # noqa: E741
    used = x.net.placed.classes_used()
    out = p - l
    costs = [x.intra(b, l - 1, j=p - 1)] if "intra" in used else []
    if "inter" in used:
        costs.append(x.cross(INTER, b, out, l * out, j=p - 1))
    if "spine" in used:
        costs.append(x.cross(SPINE, b, out, l * out, x.l * x.L * (p - x.l * x.L), j=p - 1))
    return max(costs, default=0.0)


def _closed(x: Ctx) -> Estimate | str:
    """One step: max over link classes of o (p-1) + α + B x (flows sharing the class's
    resources) / capacity."""
    why = x.need(leaves="uniform")
    if why:
        return why
    if x.p == 1:
        return estimate(0.0, 0, 0, 0)
    return estimate(one_step(x, x.b), 1, (x.p - 1) * x.b, (x.p - x.l) * x.b)


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated: member i sends atom order[i] to
    members i+s, s = 1 .. p-1, posted in that order."""
    order, p = np.asarray(node_order(pr.topology), np.int64), pr.world
    if p == 1:
        return Compiled(1, pr.count, ())
    i, s = np.repeat(np.arange(p), p - 1), np.tile(np.arange(1, p), p)
    src = order[i]
    return Compiled(p, pr.count, (messages(src, order[(i + s) % p], src, src + 1,
                                           np.zeros(src.size, bool), s),))


@algorithm("direct", "all_gather", shape=BLOCKS.generated(_generate), closed=_closed,
           sent=all_but_own)
def direct(problem: Problem, b: StepBuilder) -> None:
    """One step: member i sends its block to members i+1, i+2, ..., i+p-1 (mod p), in that order.

    Ranks in node order; the staggered order spreads the first messages over all receivers.
    Every rank posts p-1 sends and p-1 receives at once: latency-bound sizes gain, large ones
    meet incast. Elements sent per rank: (p-1) * n/p.
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p = len(order)
    if p == 1:
        return
    st = b.step()
    for i, r in enumerate(order):
        for s in range(1, p):
            b.move(r, order[(i + s) % p], blocks[r], reduce=False, step=st)
