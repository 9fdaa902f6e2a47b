"""PAT reduce_scatter (NCCL 2.23's Parallel Aggregated Trees): log2 steps, nearest peer first."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import move_runs, node_order, pat_dims, pat_offsets, pat_step
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """ceil(log2 p) steps, distance 2^d from 1 up to p/2, each rank sending p/2^(d+1) partial
    blocks as as many messages and reducing as many: Σ_d (C_d + γ p/2^(d+1) B) (C_d the dearer
    of the node-crossing and the intra message, both of which a node's last rank takes part in)."""
    return x.need(contiguous=True, pow2_p=True, pow2_l=True, leaves="one") or x.pat(True)


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated step by step."""
    order, p = np.asarray(node_order(pr.topology), np.int64), pr.world
    return Compiled(p, pr.count, tuple(pat_step(order, d, False) for d in pat_dims(p)))


@algorithm("pat", "reduce_scatter", closed=_closed, shape=BLOCKS.generated(_generate),
           sent=all_but_own)
def pat(problem: Problem, b: StepBuilder) -> None:
    """all_gather ``pat`` run backwards: the p binomial trees reduce each block into its
    rank, aggregated into one message set per step; the nearest distance first.

    Ranks in node order; at distance 2^d, d = 0 up to ceil(log2 p)-1, member i sends member
    i+2^d its partial sums of the blocks of members i+2^d+s for s a multiple of 2^(d+1) with
    s+2^d < p (``kernels.phases.pat_offsets``), which that member reduces in: a block's
    partial sum leaves a member at the step of the lowest set bit of its offset, once every
    contribution below has arrived, and reaches its own rank after the highest. Any p. Steps:
    ceil(log2 p). Elements sent per rank: (p-1) * n/p (the optimum), at distance 2^d in
    p/2^(d+1) messages, one per block; the far steps carry the least.
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p = len(order)
    for d in pat_dims(p):  # the nearest distance first
        st = b.step()
        for i, r in enumerate(order):
            to = (i + (1 << d)) % p
            move_runs(b, r, order[to], [blocks[order[(to + s) % p]] for s in pat_offsets(p, d)],
                      reduce=True, step=st)
