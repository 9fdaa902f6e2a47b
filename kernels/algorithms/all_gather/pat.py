"""PAT all_gather (NCCL 2.23's Parallel Aggregated Trees): log2 steps, farthest peer first."""

from __future__ import annotations

import numpy as np

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import move_runs, node_order, pat_dims, pat_offsets, pat_step
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """ceil(log2 p) steps, distance 2^d from p/2 down to 1, each rank sending p/2^(d+1) blocks
    as as many messages: Σ_d C_d (the dearer of the node-crossing and the intra message, both
    of which local index 0 of a node takes part in)."""
    return x.need(contiguous=True, pow2_p=True, pow2_l=True, leaves="one") or x.pat(False)


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated step by step."""
    order, p = np.asarray(node_order(pr.topology), np.int64), pr.world
    return Compiled(p, pr.count, tuple(pat_step(order, d, True) for d in reversed(pat_dims(p))))


@algorithm("pat", "all_gather", closed=_closed, shape=BLOCKS.generated(_generate),
           sent=all_but_own)
def pat(problem: Problem, b: StepBuilder) -> None:
    """Each rank's block goes out along a binomial tree rooted at it, the p trees aggregated
    into one message set per step; the farthest distance first.

    Ranks in node order; member i holds the blocks of members i+s. At distance 2^d, d =
    ceil(log2 p)-1 down to 0, member i sends member i-2^d the blocks of members i+s for s a
    multiple of 2^(d+1) with s+2^d < p (``kernels.phases.pat_offsets``), so a block crosses
    the far distances first, while few blocks travel, and the near ones last (Bruck does the
    opposite: its farthest step carries half the data). Any p, no final rotation. Steps:
    ceil(log2 p). Elements sent per rank: (p-1) * n/p (the optimum), at distance 2^d in
    p/2^(d+1) messages, one per block. NCCL splits a step further when its data exceeds the
    staging buffer (bounded memory at large sizes); a schedule's workspace holds every block,
    so each distance is one step here.
    """
    order, blocks = node_order(problem.topology), problem.blocks()
    p = len(order)
    for d in reversed(pat_dims(p)):  # the farthest distance first
        st = b.step()
        for i, r in enumerate(order):
            move_runs(b, r, order[(i - (1 << d)) % p],
                      [blocks[order[(i + s) % p]] for s in pat_offsets(p, d)], reduce=False,
                      step=st)
