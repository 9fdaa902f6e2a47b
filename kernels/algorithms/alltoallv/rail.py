"""Rail-aligned two-hop alltoallv: hop to the local rank on the destination's rail, then cross
nodes on that rail only."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.closed import INTER, INTRA, Ctx, Estimate, estimate
from kernels.collectives.alltoallv import Plan, equal_blocks, plan
from kernels.schedule import Range, StepBuilder
from kernels.topology import Topology


def _staging(v: Plan, t: Topology) -> dict[tuple[int, int], Range]:
    """(s, d) -> where relay (s's node, d's local index) stages s's block for off-node d: per
    relay, in (d, s) order from the start of the staging area."""
    nodes, out = t.nodes(), {}
    for src in nodes:
        for j, relay in enumerate(src):
            at = v.stage
            for dst in nodes:
                if dst is src:
                    continue
                d = dst[j]
                for s in src:
                    if s != relay:
                        n = int(v.c[s, d])
                        out[(s, d)], at = Range(at, at + n), at + n
    return out


def _sent(problem: Problem, r: int) -> int:
    """Rank r = (node A, local i): its blocks for A's other ranks and for off-node ranks not on
    rail i (hop 1), then every block of A's ranks for the ranks on rail i of other nodes (hop 2)."""
    v, t = plan(problem), problem.topology
    node, i = t.nodes()[t.node_of[r]], t.local_index(r)
    off = [d for d in range(t.world) if not t.same_node(r, d)]
    rail = [d for d in off if t.local_index(d) == i]
    other = [d for d in off if t.local_index(d) != i]
    return int(v.c[r, node].sum() - v.c[r, r] + v.c[r, other].sum() + v.c[node][:, rail].sum())


def _closed(x: Ctx) -> Estimate | str:
    """Uniform blocks of B bytes on N equal nodes of l, one leaf. Hop 1: every rank posts
    M1 = (l-1) N messages inside its node and receives as many (each at beta/M1), then copies
    its own block; hop 2: every rank posts M2 = (N-1) l messages across nodes, the node's
    l M2 sharing its NICs: T = o M1 + a_intra + B M1/b_intra + copy(B) + o M2 + a_inter
    + B / min(cap_rank/M2, cap_node/(l M2)) (a hop without messages costs nothing)."""
    why = equal_blocks(x.problem) or x.need(contiguous=True, leaves="one")
    if why:
        return why
    net, b, l, nn = x.net, x.b, x.l, x.N  # noqa: E741
    m1, m2 = (l - 1) * nn, (nn - 1) * l
    t = net.copy_time(b)
    if m1:
        t += net.o * m1 + net.alpha[INTRA] + b * m1 / net.beta[INTRA]
    if m2:
        t += net.o * m2 + net.alpha[INTER] + b / min(net.rank_cap[0] / m2, net.node_cap / (l * m2))
    return estimate(t, 2, (m1 + m2) * b, m2 * b)


@algorithm("rail", "alltoallv", sent=_sent, closed=_closed)
def rail(problem: Problem, b: StepBuilder) -> None:
    """Rail-aligned two hops (PXN-style): inside the node first, then across nodes on one rail.

    Needs nodes of equal size (rail j is local index j of every node). Hop 1: rank (A, i) sends
    its blocks for its own node directly (its own block copied) and its block for every
    off-node rank (B, j), j != i, to its node's rank (A, j), which stages them. Hop 2: rank
    (A, j) sends each (B, j) its own block and the staged blocks of A's other ranks, straight
    into (B, j)'s output. Every inter-node message stays on one rail.

    Elements sent per rank (A, i): its row less the own block and its rail-i blocks (hop 1),
    plus all of node A's blocks for the rail-i ranks of other nodes (hop 2). Two steps.
    """
    v, t = plan(problem), problem.topology
    t.ranks_per_node  # noqa: B018 - raises, naming the sizes, when nodes differ (as hierarchical)
    nodes = t.nodes()
    staged = _staging(v, t)
    h1, h2 = b.step(), b.step()
    for src in nodes:
        for s in src:
            for d in range(t.world):
                if d == s:
                    b.copy(s, v.send(s, s), v.recv(s, s), step=h1)
                elif t.same_node(s, d):
                    b.move_to(s, d, v.send(s, d), v.recv(s, d), reduce=False, step=h1)
                else:
                    relay = src[t.local_index(d)]
                    if relay != s:
                        b.move_to(s, relay, v.send(s, d), staged[(s, d)], reduce=False, step=h1)
                    b.move_to(relay, d, v.send(s, d) if relay == s else staged[(s, d)],
                              v.recv(s, d), reduce=False, step=h2)
