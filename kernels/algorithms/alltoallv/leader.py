"""Two-hop alltoallv through node leaders: gather to the leader, leaders exchange, scatter."""

from __future__ import annotations

from kernels.algorithm import Problem, algorithm
from kernels.closed import INTER, INTRA, Ctx, Estimate, estimate
from kernels.collectives.alltoallv import Plan, equal_blocks, plan
from kernels.schedule import Range, StepBuilder
from kernels.topology import Topology


def _pieces(v: Plan, t: Topology) -> dict[tuple[int, int], list[tuple[int, int, Range]]]:
    """Per (source node A, destination node B != A): the blocks (s, d, range) of the one message
    leader A sends leader B, in (d, s) order, ranges relative to the message's start."""
    nodes = t.nodes()
    out = {}
    for a, src in enumerate(nodes):
        for bn, dst in enumerate(nodes):
            if a == bn:
                continue
            at, blocks = 0, []
            for d in dst:
                for s in src:
                    n = int(v.c[s, d])
                    blocks.append((s, d, Range(at, at + n)))
                    at += n
            out[(a, bn)] = blocks
    return out


def _size(blocks: list[tuple[int, int, Range]]) -> int:
    return blocks[-1][2].stop if blocks else 0


def _shift(r: Range, by: int) -> Range:
    return Range(r.start + by, r.stop + by)


def _sent(problem: Problem, r: int) -> int:
    """Non-leaders: their row less the own block. A leader: its own blocks to its node, every
    block its node sends off-node, and every block arriving for the rest of its node."""
    v, t = plan(problem), problem.topology
    node = t.nodes()[t.node_of[r]]
    if node[0] != r:
        return int(v.c[r].sum() - v.c[r, r])
    mine = set(node)
    others = [q for q in range(t.world) if q not in mine]
    return int(v.c[r, node].sum() - v.c[r, r] + v.c[node][:, others].sum()
               + v.c[others][:, [d for d in node if d != r]].sum())


def _closed(x: Ctx) -> Estimate | str:
    """Uniform blocks of B bytes on N equal nodes of l, one leaf (one node: every rank posts
    and receives l-1 messages at beta/(l-1) and copies its block). Step 1: a non-leader
    posts p-1 messages (its last, to the leader, at beta/F, F = max(p-1, (l-1)(p-l+1)) the
    leader's receives), the leader copies its own and p-l staged blocks. Step 2: each leader
    posts N-1 messages of l^2 B. Step 3: each leader posts M3 = (N-1) l (l-1) messages (at
    beta/M3) and copies (N-1) l blocks. The last leader paces every step."""
    why = equal_blocks(x.problem) or x.need(contiguous=True, leaves="one")
    if why:
        return why
    net, b, l, nn, p = x.net, x.b, x.l, x.N, x.p  # noqa: E741
    if nn == 1:
        t = net.copy_time(b) + (net.o * (l - 1) + net.alpha[INTRA] + b * (l - 1) / net.beta[INTRA]
                                if l > 1 else 0.0)
        return estimate(t, 3, (l - 1) * b, 0)
    t = net.copy_time((1 + p - l) * b)
    if l > 1:
        f = max(p - 1, (l - 1) * (p - l + 1))
        t += net.o * (p - 1) + net.alpha[INTRA] + b * f / net.beta[INTRA]
    k = nn - 1
    t += net.o * k + net.alpha[INTER] + l * l * b / min(net.rank_cap[0] / k, net.node_cap / k)
    m3 = k * l * (l - 1)
    t += net.copy_time(k * l * b)
    if m3:
        t += net.o * m3 + net.alpha[INTRA] + b * m3 / net.beta[INTRA]
    sent = max((l - 1 + m3) * b + k * l * l * b, (p - 1) * b)
    return estimate(t, 3, sent, k * l * l * b)


@algorithm("leader", "alltoallv", sent=_sent, closed=_closed)
def leader(problem: Problem, b: StepBuilder) -> None:
    """Node-leader dispatch: gather at each node's leader, one message per leader pair, scatter.

    Off-node blocks go through each node's first rank. Step 1: every rank sends its blocks for
    its own node directly (its own block copied), and its blocks for other nodes to its leader,
    which stages them per destination node. Step 2: leader A sends leader B, in one message,
    every block from A's ranks to B's ranks. Step 3: each leader scatters what arrived to its
    ranks' outputs (its own by local copies).

    Elements sent per rank: a non-leader row_r - C[r][r]; a leader also forwards its node's
    off-node traffic (step 2) and its node's incoming off-node traffic (step 3). Three steps; the
    network carries one message per pair of nodes (what helps a fabric that pays per message),
    and each leader's staging holds up to 2 * the off-diagonal total.
    """
    v, t = plan(problem), problem.topology
    nodes, lead = t.nodes(), [n[0] for n in t.nodes()]
    pieces = _pieces(v, t)
    out_at: dict[tuple[int, int], int] = {}  # (A, B) -> start of the piece in leader A's staging
    in_at: dict[tuple[int, int], int] = {}  # (A, B) -> its start in leader B's incoming staging
    for a in range(len(nodes)):
        at = v.stage
        for bn in range(len(nodes)):
            if bn != a:
                out_at[(a, bn)], at = at, at + _size(pieces[(a, bn)])
    for bn in range(len(nodes)):
        at = v.stage + v.off_diagonal
        for a in range(len(nodes)):
            if a != bn:
                in_at[(a, bn)], at = at, at + _size(pieces[(a, bn)])
    s1, s2, s3 = b.step(), b.step(), b.step()
    for a, src in enumerate(nodes):
        for s in src:
            for d in src:
                if d == s:
                    b.copy(s, v.send(s, s), v.recv(s, s), step=s1)
                else:
                    b.move_to(s, d, v.send(s, d), v.recv(s, d), reduce=False, step=s1)
        for bn in range(len(nodes)):
            if bn == a:
                continue
            for s, d, rng in pieces[(a, bn)]:
                staged = _shift(rng, out_at[(a, bn)])
                if s == lead[a]:
                    b.copy(s, v.send(s, d), staged, step=s1)
                else:
                    b.move_to(s, lead[a], v.send(s, d), staged, reduce=False, step=s1)
            whole = Range(0, _size(pieces[(a, bn)]))
            b.move_to(lead[a], lead[bn], _shift(whole, out_at[(a, bn)]),
                      _shift(whole, in_at[(a, bn)]), reduce=False, step=s2)
            for s, d, rng in pieces[(a, bn)]:
                staged = _shift(rng, in_at[(a, bn)])
                if d == lead[bn]:
                    b.copy(d, staged, v.recv(s, d), step=s3)
                else:
                    b.move_to(lead[bn], d, staged, v.recv(s, d), reduce=False, step=s3)
