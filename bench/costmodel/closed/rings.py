"""Closed forms of the ring-shaped algorithms: ring, hierarchical, chain, naive.

Why they hold: in a step where every rank exchanges with its ring neighbours, the latest rank
is next to the dearest hop and stays there (the ranks on both sides of it pay it every step),
so each step adds that hop's cost: T = sum over steps of (dearest hop + γ x reduced bytes). A
pipeline (chain) of k chunks over hops of costs c_i takes sum c_i + (k-1) max c_i: the critical
path rides the first chunk to the dearest hop, waits there for the k-1 others, then rides the
last chunk to the end.
"""

from __future__ import annotations

import numpy as np

from bench.costmodel.closed import Ctx, closed, estimate
from bench.costmodel.cost import Estimate
from bench.costmodel.model import INTRA, SPINE
from kernels.algorithms.broadcast import chain as chain_alg


@closed("all_reduce", "ring")
def ring_allreduce(x: Ctx) -> Estimate | str:
    """2(p-1) steps of B = n/p elements: (p-1)(C_max + γB) + (p-1) C_max, plus h B for each
    step after the first (each sends the block its sender reduced or received the step before)."""
    why = x.need(equal=False, divides=x.p, hot=True)
    if why:
        return why
    b = x.n // x.p * x.e
    cmax = x.ring_max(b)
    t = (x.p - 1) * (2 * cmax + x.gamma * b) + max(2 * x.p - 3, 0) * x.hot * b
    return estimate(t, 2 * (x.p - 1), 2 * (x.p - 1) * b, 2 * (x.p - 1) * b * (x.N > 1))


def _ring_half(x: Ctx, reduce: bool) -> Estimate:
    """p-1 steps of one block; each after the first sends what the step before wrote."""
    b = x.n // x.p * x.e
    t = (x.p - 1) * (x.ring_max(b) + (x.gamma * b if reduce else 0.0)) + max(x.p - 2, 0) * x.hot * b
    return estimate(t, x.p - 1, (x.p - 1) * b, (x.p - 1) * b * (x.N > 1))


@closed("all_gather", "ring")
def ring_allgather(x: Ctx) -> Estimate | str:
    """p-1 steps of one block: (p-1) C_max."""
    return _ring_half(x, reduce=False)


@closed("reduce_scatter", "ring")
def ring_reduce_scatter(x: Ctx) -> Estimate | str:
    """p-1 steps of one block, reduced: (p-1)(C_max + γB)."""
    return _ring_half(x, reduce=True)


@closed("all_reduce", "hierarchical")
def hierarchical_allreduce(x: Ctx) -> Estimate | str:
    """(l-1)(C_in(n/l) + γ n/l) + (N-1)(C_x(n/p) + γ n/p) + (N-1) C_x(n/p) + (l-1) C_in(n/l),
    C_x the dearest node hop with all l ranks of a node crossing it at once. Hot sends: every
    step but the very first sends what the step before reduced or received."""
    why = x.need(leaves="uniform", divides=x.p, hot=True)
    if why:
        return why
    l, nn = x.l, x.N  # noqa: E741
    bl, bx = x.n // l * x.e, x.n // x.p * x.e
    cin = x.intra(bl) if l > 1 else 0.0
    cx = float(x.edge_costs(bx, l).max()) if nn > 1 else 0.0
    t = (l - 1) * (2 * cin + x.gamma * bl) + (nn - 1) * (2 * cx + x.gamma * bx)
    inter_rs = nn - 1 if l > 1 else max(nn - 2, 0)  # the first is cold only without a node phase
    t += x.hot * (max(l - 2, 0) * bl + (l - 1) * bl + (inter_rs + nn - 1) * bx)
    return estimate(t, 2 * (l - 1) + 2 * (nn - 1), 2 * (l - 1) * bl + 2 * (nn - 1) * bx,
                    2 * (nn - 1) * bx)


@closed("all_gather", "hierarchical")
def hierarchical_allgather(x: Ctx) -> Estimate | str:
    """(N-1) C_x(B) over the node ring, then one step in which each rank posts N(l-1) messages of
    one block (its N blocks to each of l-1 peers): o N(l-1) + α_intra + N(l-1) B / β_intra.
    Hot sends: the ring forwards what it received after its first step, and the last block a
    rank posts inside the node is the last node's, received (hot) on every node but that one."""
    why = x.need(contiguous=True, leaves="uniform", hot=True)
    if why:
        return why
    l, nn, b = x.l, x.N, x.n // x.p * x.e  # noqa: E741
    m = nn * (l - 1)
    cx = float(x.edge_costs(b, l).max()) if nn > 1 else 0.0
    t = (nn - 1) * cx + (x.intra(b, m, j=m) if l > 1 else 0.0)
    t += x.hot * b * (max(nn - 2, 0) + (nn > 1 and l > 1))
    return estimate(t, nn - 1 + (l > 1), (nn - 1) * b + m * b, (nn - 1) * b)


@closed("reduce_scatter", "hierarchical")
def hierarchical_reduce_scatter(x: Ctx) -> Estimate | str:
    """(l-1) steps in which each rank sends a peer the N blocks it holds for it (N messages):
    o N + α_intra + N B / β_intra + γ N B each; then (N-1)(C_x(B) + γB) over the node ring.
    Hot sends: the node ring's blocks, reduced inside the node (or, with one rank per node, at
    the ring's step before)."""
    why = x.need(contiguous=True, leaves="uniform", hot=True)
    if why:
        return why
    l, nn, b = x.l, x.N, x.n // x.p * x.e  # noqa: E741
    cx = float(x.edge_costs(b, l).max()) if nn > 1 else 0.0
    cin = x.intra(b, nn, j=nn) + x.gamma * nn * b if l > 1 else 0.0
    t = (l - 1) * cin + (nn - 1) * (cx + x.gamma * b)
    t += x.hot * (nn - 1 if l > 1 else max(nn - 2, 0)) * b
    return estimate(t, l - 1 + nn - 1, (x.p - 1) * b, (nn - 1) * b)


@closed("broadcast", "chain")
def chain_broadcast(x: Ctx) -> Estimate | str:
    """k chunks down the chain of ranks in node order: sum of hop costs + (k-1) x the dearest."""
    if x.problem.root != 0:
        return "root other than rank 0"
    k = chain_alg.num_chunks(x.n, x.e)
    why = x.need(equal=False, divides=k, hot=True)
    if why:
        return why
    if x.p == 1:
        return estimate(0.0, 0, 0, 0)
    b = x.n // k * x.e
    edges = list(x.edge_costs(b, 1, wrap=False))
    hops = edges + [x.intra(b)] * (x.p - 1 - len(edges))
    # hot sends: every hop but the root's (rank 0 -> 1: inside node 0 unless it holds one rank)
    first = x.intra(b) if x.net.placed.node_sizes[0] > 1 else edges[0]
    rest = list(hops)
    rest.remove(first)
    hops = [first] + [c + x.hot * b for c in rest]
    t = sum(hops) + (k - 1) * max(hops)
    return estimate(t, k + x.p - 2, x.n * x.e, x.n * x.e * (x.N > 1))


@closed("all_reduce", "naive")
def naive_allreduce(x: Ctx) -> Estimate | str:
    """Rank k sends the buffer to rank 0 in step k, which reduces it: sum of C(k -> 0) + γ nB;
    then rank 0 posts p-1 sends at once, the k-th costing o k + α + bytes / shared bandwidth
    + h bytes (the buffer it reduced)."""
    p, nb, net = x.p, x.n * x.e, x.net
    if p == 1:
        return estimate(0.0, 0, 0, 0)
    k = np.arange(1, p)
    zero = np.zeros_like(k)
    cls = net.cls(k, zero)
    alone = np.minimum(np.minimum(net.rank_cap[k], net.rank_cap[0]), net.node_cap)
    lk, l0 = net.leaf[k], net.leaf[0]
    alone = np.where(cls == SPINE, np.minimum(alone, np.minimum(net.up_cap[lk], net.up_cap[l0])),
                     alone)
    alone = np.where(cls == INTRA, net.beta[INTRA], alone)
    gather = net.o + net.alpha[cls] + nb / alone + x.gamma * nb  # one message per step
    down = net.o * k + net.alpha[cls] + nb / net.rates(zero, k, cls) + x.hot * nb  # reduced: hot
    t = float(gather.sum() + down.max())
    return estimate(t, p, (p - 1) * nb, int((cls != INTRA).sum()) * nb)
