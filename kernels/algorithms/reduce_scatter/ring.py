"""Ring reduce_scatter: each block travels once around the ring, reduced at every hop (NCCL's ring)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS
from kernels.phases import node_order
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """p-1 steps of one block, reduced: (p-1)(C_max + γB)."""
    return x.ring_pass(reduce=True)


@algorithm("ring", "reduce_scatter", shape=BLOCKS, closed=_closed, sent=all_but_own)
def ring(problem: Problem, b: StepBuilder) -> None:
    """p-1 steps; in step s member i sends its partial sum of block (i-1-s) mod p to member i+1.

    Elements sent per rank: (p-1) * n/p, i.e. (p-1)/p of the input (the optimum). Ranks are
    ordered node by node, so the ring crosses between nodes once per node.
    """
    members = node_order(problem.topology)
    blocks = problem.blocks()
    # rings.reduce_scatter ends with member i owning chunk (i+1) % m: make that its own block.
    owned = [blocks[members[(i - 1) % len(members)]] for i in range(len(members))]
    rings.reduce_scatter(b, members, owned, rings.open_steps(b, len(members) - 1))
