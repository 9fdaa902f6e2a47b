"""Hierarchical AllReduce: intra-node reduce-scatter, inter-node allreduce, intra-node all-gather."""

from __future__ import annotations

import numpy as np

from kernels import rings
from kernels.algorithm import Problem, algorithm
from kernels.chunks import split
from kernels.closed import Ctx, Estimate, estimate
from kernels.compiled import Compiled, Shape
from kernels.schedule import StepBuilder


def _atoms(pr: Problem, n: int) -> np.ndarray:
    """Real elements per atom of the symbolic build: split(n, l) into local chunks, each split
    into N pieces."""
    l = pr.topology.ranks_per_node  # noqa: E741
    return np.concatenate([[c.size for c in split(ch.size, pr.world // l)] for ch in split(n, l)])


def _closed(x: Ctx) -> Estimate | str:
    """(l-1)(C_in(n/l) + γ n/l) + (N-1)(C_x(n/p) + γ n/p) + (N-1) C_x(n/p) + (l-1) C_in(n/l),
    C_x the dearest node hop with all l ranks of a node crossing it at once."""
    why = x.need(leaves="uniform", divides=x.p)
    if why:
        return why
    l, nn, bx = x.l, x.N, x.b  # noqa: E741
    bl = x.n // l * x.e
    cin = x.intra(bl) if l > 1 else 0.0
    cx = float(x.edge_costs(bx, l).max()) if nn > 1 else 0.0
    t = (l - 1) * (2 * cin + x.gamma * bl) + (nn - 1) * (2 * cx + x.gamma * bx)
    return estimate(t, 2 * (l - 1) + 2 * (nn - 1), 2 * (l - 1) * bl + 2 * (nn - 1) * bx,
                    2 * (nn - 1) * bx)


def _generate(pr: Problem) -> Compiled:
    """The build on p = N l atoms (local chunk c is atoms c N .. c N + N - 1, its piece x atom
    c N + x), generated: the rings inside the nodes on whole local chunks, the rings of
    same-index ranks across nodes on the pieces of local chunk i + 1 of their index i."""
    l = pr.topology.ranks_per_node  # noqa: E741 - as the build: every node holds l ranks
    nodes = np.asarray(pr.topology.nodes(), np.int64)
    n = nodes.shape[0]
    intra = np.broadcast_to(np.arange(l, dtype=np.int64) * n, (n, l))
    inter = ((np.arange(l)[:, None] + 1) % l * n + np.arange(n)[None, :]).astype(np.int64)
    return Compiled(pr.world, pr.count, (
        *rings.ring_steps(nodes, intra, False, n), *rings.ring_steps(nodes.T, inter, False),
        *rings.ring_steps(nodes.T, inter, True), *rings.ring_steps(nodes, intra, True, n)))


@algorithm("hierarchical", shape=Shape(count=lambda pr: pr.world, atoms=_atoms,
                                       generate=_generate), closed=_closed)
def hierarchical(problem: Problem, b: StepBuilder) -> None:
    """Ring reduce-scatter in each node, ring allreduce across nodes, ring all-gather in each node.

    With N nodes of l ranks: (l-1) + 2(N-1) + (l-1) steps. Bytes sent per rank:
    2(l-1)/l * n inside the node plus 2(N-1)/N * n/l between nodes — only 1/l of the naive ring's
    inter-node traffic per rank, which is the point on clusters whose nodes are joined by slower
    links. Nodes come from the topology (``ranks_per_node``) and must all hold l ranks.
    """
    nodes, l = problem.topology.nodes(), problem.topology.ranks_per_node  # noqa: E741
    chunks = split(problem.count, l)  # local chunk c, cut in one piece per node
    pieces = [split(ch.size, len(nodes), ch.start) for ch in chunks]
    rs_in, rs_x, ag_x, ag_in = (rings.open_steps(b, m) for m in (l - 1, len(nodes) - 1,
                                                                 len(nodes) - 1, l - 1))
    for node in nodes:  # each node reduce-scatters the local chunks: index i owns chunk i + 1
        rings.reduce_scatter(b, node, chunks, rs_in)
    for i in range(l):  # the ranks of index i all-reduce the pieces of chunk i + 1 across nodes
        across = [node[i] for node in nodes]
        rings.reduce_scatter(b, across, pieces[(i + 1) % l], rs_x)
        rings.all_gather(b, across, pieces[(i + 1) % l], ag_x)
    for node in nodes:  # each node all-gathers the local chunks
        rings.all_gather(b, node, chunks, ag_in)
