"""Pairwise reduce_scatter: every rank sends block j straight to rank j, one partner per step."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled, messages
from kernels.phases import node_order
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """p-1 shift steps (in node order) of one block, reduced: sum of (C_k + γB)."""
    why = x.need(leaves="one")
    if why:
        return why
    total, inter = x.one_block_shifts()
    return estimate(total + (x.p - 1) * x.gamma * x.b, x.p - 1, (x.p - 1) * x.b, inter)


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated: in step s member i sends atom
    order[i+s] to member i+s."""
    order, p = np.asarray(node_order(pr.topology), np.int64), pr.world
    src, one = order, np.ones(p, bool)
    return Compiled(p, pr.count, tuple(
        messages(src, (dst := np.roll(order, -s)), dst, dst + 1, one, np.zeros(p, np.int64))
        for s in range(1, p)))


@algorithm("direct", "reduce_scatter", shape=BLOCKS.generated(_generate), closed=_closed,
           sent=all_but_own)
def direct(problem: Problem, b: StepBuilder) -> None:
    """p-1 steps; in step s member i sends block i+s (mod p) to member i+s, which reduces it in.

    Ranks in node order. Each rank's own block takes one reduction per step (a step writes an
    element once), so the p-1 contributions arrive over p-1 steps, each from a different rank
    and never twice. Elements sent per rank: (p-1) * n/p, each element exactly once.
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p = len(order)
    for s in range(1, p):
        st = b.step()
        for i, r in enumerate(order):
            to = order[(i + s) % p]
            b.move(r, to, blocks[to], reduce=True, step=st)
