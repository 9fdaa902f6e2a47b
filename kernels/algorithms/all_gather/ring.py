"""Ring all_gather: each block travels once around the ring (NCCL's ring)."""

from __future__ import annotations

from kernels import rings
from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """p-1 steps of one block at the pace of the dearest hop: (p-1) C_max."""
    return x.ring_pass(reduce=False)


@algorithm("ring", "all_gather", shape=BLOCKS, closed=_closed, sent=all_but_own)
def ring(problem: Problem, b: StepBuilder) -> None:
    """p-1 steps; in step s member i forwards block (i-s) mod p to member i+1.

    Elements sent per rank: (p-1) * n/p, i.e. (p-1)/p of the output (the optimum). Ranks are
    ordered node by node, so the ring crosses between nodes once per node.
    """
    members = [r for node in problem.topology.nodes() for r in node]
    blocks = problem.blocks()
    # rings.all_gather starts with member i owning chunk (i+1) % m: give it its own block.
    owned = [blocks[members[(i - 1) % len(members)]] for i in range(len(members))]
    rings.all_gather(b, members, owned, rings.open_steps(b, len(members) - 1))
