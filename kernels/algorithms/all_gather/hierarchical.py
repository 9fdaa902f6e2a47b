"""Hierarchical all_gather: a ring between nodes, then one exchange inside each node (any nodes)."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import BLOCKS, Compiled
from kernels.phases import Moves, calls, held, holders, hop_moves, node_hops, post
from kernels.schedule import StepBuilder


def _sent(problem: Problem, rank: int) -> int:
    t = problem.topology
    sizes, k, i = [len(n) for n in t.nodes()], t.node_of[rank], t.local_index(rank)
    lk, after = sizes[k], sizes[(k + 1) % len(sizes)]
    return (lk * held(t, rank) + (i - after) // lk) * problem.block  # (i-l')//l = -ceil((l'-i)/l)


def _closed(x: Ctx) -> Estimate | str:
    """(N-1) C_x(B) over the node ring, then one step in which each rank posts N(l-1) messages of
    one block (its N blocks to each of l-1 peers): o N(l-1) + α_intra + N(l-1) B / β_intra."""
    why = x.need(contiguous=True, leaves="uniform")
    if why:
        return why
    l, nn, b = x.l, x.N, x.b  # noqa: E741
    m = nn * (l - 1)
    cx = float(x.edge_costs(b, l).max()) if nn > 1 else 0.0
    t = (nn - 1) * cx + (x.intra(b, m, j=m) if l > 1 else 0.0)
    return estimate(t, nn - 1 + (l > 1), (nn - 1) * b + m * b, (nn - 1) * b)


def _share(pr: Problem) -> Moves:
    """The step inside the nodes: every rank sends the blocks it holds to every other rank of
    its node."""
    nodes, hold = pr.topology.nodes(), holders(pr.topology)
    return [(r, node[(i + s) % len(node)], have[i]) for node, have in zip(nodes, hold)
            for i, r in enumerate(node) for s in range(1, len(node))]


def _generate(pr: Problem) -> Compiled:
    """The build on p atoms (block r is atom r), generated: the ring between nodes, then the
    exchange inside each node."""
    nodes = pr.topology.nodes()
    steps = [node_hops(nodes, s, False) for s in range(len(nodes) - 1)]
    if max(len(node) for node in nodes) > 1:
        steps.append(calls(_share(pr), False))
    return Compiled(pr.world, pr.count, tuple(steps))


@algorithm("hierarchical", "all_gather", sent=_sent, closed=_closed,
           shape=BLOCKS.generated(_generate))
def hierarchical(problem: Problem, b: StepBuilder) -> None:
    """Nodes pass blocks around a ring of nodes, then each rank shares its blocks in its node.

    On a node of l ranks, local index i holds the blocks of local indices j = i mod l of every
    node (its own included). Inter-node ring, N-1 steps (N nodes): in step s node k forwards the
    blocks of node k-s to node k+1, each block from its holder on k to its holder on k+1 (with
    equal nodes: local index i to local index i). Then one intra-node step: every rank sends the
    blocks it holds to every other rank of its node. Nodes may differ in size and rank order.
    Elements sent per rank, with H = sum over nodes m of ceil((l_m - i)/l) blocks held and c = n/p:
    (H - ceil((l' - i)/l)) * c between nodes (l' the next node's size) plus (l-1) * H * c inside;
    with N nodes of l ranks: (N-1)*c + (l-1)*N*c = (p-1)*c, of which only (N-1)*c between nodes.
    """
    nodes, blocks = problem.topology.nodes(), problem.blocks()
    for s in range(len(nodes) - 1):  # node k forwards node k-s's blocks to node k+1
        post(b, blocks, hop_moves(nodes, s), reduce=False)
    if max(len(node) for node in nodes) > 1:
        post(b, blocks, _share(problem), reduce=False)
