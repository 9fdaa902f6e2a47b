"""Hierarchical reduce_scatter: pairwise reduction inside each node, then a ring between nodes."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm, all_but_own
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import Moves, calls, holders, hop_moves, node_hops, post
from kernels.schedule import StepBuilder


def _closed(x: Ctx) -> Estimate | str:
    """(l-1) steps in which each rank sends a peer the N blocks it holds for it (N messages):
    o N + α_intra + N B / β_intra + γ N B each; then (N-1)(C_x(B) + γB) over the node ring."""
    why = x.need(contiguous=True, leaves="uniform")
    if why:
        return why
    l, nn, b = x.l, x.N, x.b  # noqa: E741
    cx = float(x.edge_costs(b, l).max()) if nn > 1 else 0.0
    cin = x.intra(b, nn, j=nn) + x.gamma * nn * b if l > 1 else 0.0
    t = (l - 1) * cin + (nn - 1) * (cx + x.gamma * b)
    return estimate(t, l - 1 + nn - 1, (x.p - 1) * b, (nn - 1) * b)


def _pairwise(pr: Problem, s: int) -> Moves:
    """Intra-node step s: local index i sends local index i+s the blocks that one holds."""
    return [(r, node[(i + s) % len(node)], have[(i + s) % len(node)])
            for node, have in zip(pr.topology.nodes(), holders(pr.topology)) if s < len(node)
            for i, r in enumerate(node)]


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated: the pairwise steps inside nodes,
    then the ring between nodes."""
    nodes = pr.topology.nodes()
    steps = [calls(_pairwise(pr, s), True) for s in range(1, max(len(node) for node in nodes))]
    steps += [node_hops(nodes, 1 + s, True) for s in range(len(nodes) - 1)]
    return Compiled(pr.world, pr.count, tuple(steps))


@algorithm("hierarchical", "reduce_scatter", closed=_closed, sent=all_but_own,
           shape=BLOCKS.generated(_generate))
def hierarchical(problem: Problem, b: StepBuilder) -> None:
    """Each node reduces every block onto one of its ranks, then nodes reduce around a ring.

    On a node of l ranks, local index i holds the blocks of local indices j = i mod l of every
    node (its own included). Intra-node, l-1 pairwise steps (the largest node's count; smaller
    nodes idle): in step s local index i sends local index i+s (mod l) the blocks that one
    holds, which reduces them in. Inter-node ring, N-1 steps (N nodes): in step s node k sends
    node k+1 its partial sums of the blocks of node k-1-s, each block from its holder on k to
    its holder on k+1, which reduces it in; each block ends on its own rank. Nodes may differ in
    size and rank order. Elements sent per rank (c = n/p), with H = sum over nodes m of
    ceil((l_m - i)/l) blocks held: (p - H) * c inside the node plus (H - 1) * c between nodes,
    (p-1)*c in all; with N nodes of l ranks, (N-1)*c between nodes.
    """
    nodes, blocks = problem.topology.nodes(), problem.blocks()
    for s in range(1, max(len(node) for node in nodes)):
        post(b, blocks, _pairwise(problem, s), reduce=True)
    for s in range(len(nodes) - 1):  # node k passes on its partial sums of node k-1-s's blocks
        post(b, blocks, hop_moves(nodes, 1 + s), reduce=True)
