"""K per algorithm for the symbolic builds of :mod:`bench.costmodel.compiled` (which split of the
buffer its ranges are runs of). Tests check each against the real schedule for many counts; an
algorithm missing here is evaluated on its real schedule, size by size."""

from __future__ import annotations

import numpy as np

from bench.costmodel.compiled import SYMBOLIC, Sym
from kernels.algorithm import Problem
from kernels.algorithms.all_reduce import tree
from kernels.algorithms.broadcast import chain
from kernels.chunks import split


def _pp(pr: Problem) -> int:
    return 1 << (pr.world.bit_length() - 1)


def _hier_atoms(pr: Problem, n: int) -> np.ndarray:
    """all_reduce/hierarchical: split(n, l) into local chunks, each split into N pieces."""
    l = pr.topology.ranks_per_node  # noqa: E741
    nodes = pr.world // l
    return np.concatenate([[c.size for c in split(ch.size, nodes)] for ch in split(n, l)])


WHOLE = Sym(count=lambda pr: 1)
BLOCKS = Sym(count=lambda pr: pr.world)
PIPELINE_TREE = Sym(count=lambda pr: tree.num_chunks(pr.count, pr.itemsize),
                    itemsize=lambda pr: tree.CHUNK_BYTES)
PIPELINE_CHAIN = Sym(count=lambda pr: chain.num_chunks(pr.count, pr.itemsize),
                     itemsize=lambda pr: chain.CHUNK_BYTES)

SYMBOLIC.update({
    ("all_reduce", "ring"): BLOCKS,
    ("all_reduce", "halving_doubling"): Sym(count=_pp),
    ("all_reduce", "naive"): WHOLE,
    ("all_reduce", "tree"): PIPELINE_TREE,
    ("all_reduce", "hierarchical"): Sym(count=lambda pr: pr.world, atoms=_hier_atoms),
    **{("all_gather", a): BLOCKS for a in ("ring", "direct", "hierarchical", "bruck",
                                             "recursive_doubling")},
    **{("reduce_scatter", a): BLOCKS for a in ("ring", "direct", "hierarchical",
                                                 "recursive_halving")},
    **{("alltoall", a): BLOCKS for a in ("direct", "pairwise", "bruck")},
    ("broadcast", "binomial"): WHOLE,
    ("broadcast", "chain"): PIPELINE_CHAIN,
    ("broadcast", "scatter_allgather"): BLOCKS,
    ("reduce", "binomial"): WHOLE,
    ("reduce", "rabenseifner"): Sym(count=_pp),
    ("sendrecv", "ring"): WHOLE,
    ("sendrecv", "pairs"): WHOLE,
})
