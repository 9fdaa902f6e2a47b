"""Closed forms: an algorithm's cost-model time without building its schedules, for the large p
where building p schedules is too slow; declared beside the algorithm's ``build``
(``@algorithm(..., closed=form)``) and held equal to the evaluator by the tests.

A form takes a :class:`Ctx` (the problem and the priced job) and returns an :class:`Estimate`,
a :class:`~kernels.compiled.Compiled` schedule it generated with numpy (evaluated exactly by the
evaluator), or a string saying why it does not apply. The priced job is read through the
:class:`Fabric` protocol, which the cost model's ``Net`` satisfies, so kernels import nothing
from ``bench``. Forms price no hot sends: a profile with them is priced by the evaluator alone.

Notation: p ranks, N nodes of l ranks, L nodes per leaf; c = the block or chunk in elements,
B its bytes; C(...) a message's cost ``o j + α + bytes x flows / capacity``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kernels.compiled import Compiled

if TYPE_CHECKING:
    from kernels.problem import Problem

INTRA, INTER, SPINE = 0, 1, 2  # link classes: inside a node, between nodes of a leaf, via spine
CLASS_NAMES = ("intra", "inter", "spine")


@dataclass(frozen=True)
class Estimate:
    time_s: float
    steps: int | None
    bytes_sent_max: int | None
    bytes_inter_max: int | None
    method: str  # "closed form", "generated", "schedule", "... curve"


def estimate(t: float, steps: int, sent: float, inter: float) -> Estimate:
    return Estimate(float(t), int(steps), round(sent), round(inter), "closed form")


class Placement(Protocol):
    """Where the job's ranks sit (the cost model's ``Placed``)."""

    world: int
    node_sizes: tuple[int, ...]
    num_nodes: int
    num_leaves: int
    leaf_of: tuple[int, ...]  # leaf of each node
    order: tuple[int, ...]  # ranks node by node
    equal_nodes: bool
    contiguous: bool
    uniform_leaves: bool

    def classes_used(self) -> list[str]: ...


class Fabric(Protocol):
    """What a closed form may read of the priced job (the cost model's ``Net``): per class α, β
    (indexed INTRA, INTER, SPINE), o, γ, NICs per node and the capacities derived from them."""

    placed: Placement
    o: float
    gamma: float
    nics: int
    alpha: np.ndarray
    beta: np.ndarray
    node_cap: float
    rank_cap: np.ndarray  # per rank: its share of its node's NICs
    up_cap: np.ndarray  # per leaf: its uplink to the spines
    leaf: np.ndarray  # per rank

    def cls(self, a: Any, b: Any) -> np.ndarray: ...

    def rates(self, src: np.ndarray, dst: np.ndarray, cls: np.ndarray) -> np.ndarray: ...

    def copy_time(self, nbytes: Any) -> Any: ...


ClosedForm = Callable[["Ctx"], "Estimate | Compiled | str"]


@dataclass(frozen=True)
class Ctx:
    problem: Problem
    net: Fabric
    max_generated: int | None = None  # a form that generates per-rank schedules stops here

    def generates(self) -> str | None:
        """Why a form that generates its schedule per rank does not apply here (p beyond the
        caller's ``max_generated``: its arrays grow as p x steps), or None."""
        if self.max_generated is not None and self.p > self.max_generated:
            return (f"it generates per-rank schedules, evaluated up to p = {self.max_generated}")
        return None

    @property
    def p(self) -> int:
        return self.problem.world

    @property
    def n(self) -> int:
        return self.problem.count

    @property
    def e(self) -> int:
        return self.problem.itemsize

    @property
    def b(self) -> int:
        """Bytes of one n/p block."""
        return self.n // self.p * self.e

    @property
    def N(self) -> int:
        return self.net.placed.num_nodes

    @property
    def l(self) -> int:  # noqa: E743 - ranks per node (equal nodes)
        return self.net.placed.node_sizes[0]

    @property
    def leaves(self) -> int:
        return self.net.placed.num_leaves

    @property
    def L(self) -> int:  # this job's nodes per leaf (uniform leaves)
        return self.N // self.leaves

    @property
    def gamma(self) -> float:
        return self.net.gamma

    @property
    def order(self) -> tuple[int, ...]:
        """Ranks node by node (``kernels.phases.node_order``), from the placed job."""
        return self.net.placed.order

    def need(self, *, equal: bool = True, contiguous: bool = False, leaves: str = "any",
             pow2_p: bool = False, pow2_l: bool = False, divides: int = 1,
             root0: bool = False) -> str | None:
        """Why this closed form does not apply, or None. ``leaves``: any | uniform | pow2
        (uniform and L a power of two) | one (no spine level)."""
        pl = self.net.placed
        checks = [
            (root0 and self.problem.root != 0, "root other than rank 0"),
            (equal and not pl.equal_nodes, "uneven nodes"),
            (contiguous and not pl.contiguous, "ranks not numbered node by node"),
            (pow2_p and self.p & (self.p - 1), "p not a power of two"),
            (pow2_l and self.l & (self.l - 1), "ranks per node not a power of two"),
            (self.n % divides, f"count {self.n} not a multiple of {divides} (uneven chunks)"),
            (leaves == "one" and self.leaves > 1, "several leaf switches"),
            (leaves in ("uniform", "pow2") and self.leaves > 1 and not pl.uniform_leaves,
             "leaves hold different numbers of nodes"),
            (leaves == "pow2" and self.leaves > 1 and self.L & (self.L - 1),
             "nodes per leaf not a power of two"),
        ]
        return next((why for bad, why in checks if bad), None)

    def intra(self, nbytes: float, flows: float = 1, j: int = 1) -> float:
        """A message inside a node whose ports carry ``flows`` concurrent messages."""
        net = self.net
        return net.o * j + net.alpha[INTRA] + nbytes * flows / net.beta[INTRA]

    def cross(self, cls: int, nbytes: float, rank_flows: float = 1, node_flows: float = 1,
              leaf_flows: float = 1, j: int = 1) -> float:
        """A message between nodes (INTER or SPINE) with that many concurrent flows on its
        rank's NIC share, its node's NICs, and (SPINE) its leaf's uplink (equal nodes and
        uniform leaves: every cap is the same)."""
        net = self.net
        rate = min(net.rank_cap[0] / rank_flows, net.node_cap / node_flows)
        if cls == SPINE:
            rate = min(rate, net.up_cap[0] / leaf_flows)
        return net.o * j + net.alpha[cls] + nbytes / rate

    def by_distance(self, d: int, nbytes: float, reduce: bool = False,
                    tree: bool = False) -> tuple[float, bool]:
        """Cost of the step where every rank exchanges ``nbytes`` with the rank ``d`` places
        away in node order (d a power of two, l and L powers of two or one node/leaf), and
        whether it crosses nodes. All l ranks of a node cross together; all l*L of a leaf.
        ``tree``: a binomial step, one sender per node and leaf once they cross, each flow
        alone on its resources."""
        node, leaf = (1, 1) if tree else (self.l, self.l * self.L)
        if d < self.l:
            c, x = self.intra(nbytes), False
        elif self.leaves > 1 and d >= self.l * self.L:
            c, x = self.cross(SPINE, nbytes, 1, node, leaf), True
        else:
            c, x = self.cross(INTER, nbytes, 1, node), True
        return c + (self.gamma * nbytes if reduce else 0.0), x

    def halving(self, block_bytes: float, reduce: bool, down: bool) -> tuple[float, float]:
        """log2 p steps exchanging d blocks with the partner d away (d = p/2..1 if ``down``,
        else 1..p/2): their time and the bytes sent across nodes by each rank."""
        t = inter = 0.0
        ds = [1 << i for i in range(self.p.bit_length() - 1)]
        for d in reversed(ds) if down else ds:
            c, crosses = self.by_distance(d, d * block_bytes, reduce)
            t += c
            inter += d * block_bytes if crosses else 0.0
        return t, inter

    def shift_costs(self, offsets: np.ndarray,
                    nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cost of each shift step (every rank sends ``nbytes`` to the rank ``offset`` on, one
        leaf) and whether local index a's message crosses nodes, as a (steps, l) array. A node's
        ranks split into those that stay on the node and those that cross, the same on every
        node, so the step costs its dearest class."""
        l, nn, net = self.l, self.N, self.net  # noqa: E741
        q, m = np.divmod(offsets, l)
        far_lo, far_hi = (q % nn) != 0, ((q + 1) % nn) != 0  # ranks a < l-m / a >= l-m cross?
        nx = (l - m) * far_lo + m * far_hi
        has_in = ((l - m) * ~far_lo + m * ~far_hi) > 0
        cin = np.where(has_in, net.o + net.alpha[INTRA] + nbytes / net.beta[INTRA], 0.0)
        if nn > 1:
            rate = np.minimum(net.rank_cap[0], net.node_cap / np.maximum(nx, 1))
            cx = np.where(nx > 0, net.o + net.alpha[INTER] + nbytes / rate, 0.0)
        else:
            cx = np.zeros_like(cin)
        a = np.arange(l)
        crosses = np.where(a[None, :] < (l - m)[:, None], far_lo[:, None], far_hi[:, None])
        return np.maximum(cin, cx), crosses

    def one_block_shifts(self) -> tuple[float, float]:
        """p-1 shifts (offsets 1..p-1) of one n/p block: the summed step costs and the most
        bytes any rank sends across nodes. Offset q l + m costs what any q strictly between 0
        and N-1 costs for that m (the shift leaves every node on both sides), so one such q
        stands for N-2 of them: l x 3 shifts priced, not p."""
        l, nn = self.l, self.N  # noqa: E741
        qs = sorted({0, 1, nn - 1} if nn > 2 else set(range(nn)))
        weight = {q: (nn - 2 if 0 < q < nn - 1 else 1) for q in qs}
        k = np.asarray([q * l + m for q in qs for m in range(l) if 0 < q * l + m < self.p])
        w = np.asarray([weight[int(x) // l] for x in k], dtype=np.float64)
        if k.size == 0:
            return 0.0, 0.0
        costs, crosses = self.shift_costs(k, np.full(k.shape, float(self.b)))
        inter = float((crosses * w[:, None]).sum(axis=0).max()) * self.b
        return float((costs * w).sum()), inter

    def ring_pass(self, reduce: bool) -> Estimate:
        """p-1 ring steps of one block (reduced or not), each at the dearest hop's pace."""
        p, b = self.p, self.b
        t = (p - 1) * (self.ring_max(b) + (self.gamma * b if reduce else 0.0))
        return estimate(t, p - 1, (p - 1) * b, (p - 1) * b * (self.N > 1))

    @cached_property
    def node_rank_cap(self) -> np.ndarray:
        sizes = np.asarray(self.net.placed.node_sizes, dtype=np.float64)
        return self.net.node_cap / np.minimum(sizes, self.net.nics)

    def edge_costs(self, nbytes: float, flows: int, wrap: bool = True) -> np.ndarray:
        """Cost of a message of ``nbytes`` on each hop node k -> k+1 (mod N if ``wrap``), when
        ``flows`` ranks of each node cross that hop at once (one flow per rank)."""
        pl, net = self.net.placed, self.net
        nn = pl.num_nodes
        if nn < 2:
            return np.zeros(0)
        a = np.arange(nn if wrap else nn - 1)
        if pl.num_leaves == 1 and pl.equal_nodes:  # every hop alike: no per-node arrays read
            rate = min(float(net.rank_cap[0]), net.node_cap / flows)
            return np.full(a.size, net.o + net.alpha[INTER] + nbytes / rate)
        b = (a + 1) % nn
        leaf = np.asarray(pl.leaf_of)
        rate = np.minimum(np.minimum(self.node_rank_cap[a], self.node_rank_cap[b]),
                          net.node_cap / flows)
        spine = leaf[a] != leaf[b]
        if spine.any():
            rate = np.where(spine, np.minimum(rate, np.minimum(net.up_cap[leaf[a]],
                                                               net.up_cap[leaf[b]]) / flows), rate)
        alpha = np.where(spine, net.alpha[SPINE], net.alpha[INTER])
        return net.o + alpha + nbytes / rate

    def ring_max(self, nbytes: float, flows: int = 1, wrap: bool = True) -> float:
        """The dearest hop of a ring (or chain) over the ranks in node order."""
        edges = self.edge_costs(nbytes, flows, wrap)
        costs = [float(edges.max())] if edges.size else []
        if self.net.placed.node_sizes[0] > 1 or max(self.net.placed.node_sizes) > 1:
            costs.append(self.intra(nbytes))
        return max(costs, default=0.0)

    def channel_hops(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One step of k rail-aligned rings (:func:`kernels.rings.channel_ring`) as (src, dst,
        j): in channel c local index a of node m sends to a+1 of its node, or, at a = c mod l_m,
        to local index c+1 of node m+1; a rank posts its channels in order (j = c+1)."""
        pl = self.net.placed
        sizes, order = np.asarray(pl.node_sizes), np.asarray(pl.order)
        start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        node = np.repeat(np.arange(len(sizes)), sizes)
        local, ln = np.arange(self.p) - start[node], sizes[node]
        nxt = (node + 1) % len(sizes)
        c = np.arange(k)[:, None]
        dpos = np.where(local == c % ln, start[nxt] + (c + 1) % sizes[nxt],
                        start[node] + (local + 1) % ln)
        return (np.broadcast_to(order, dpos.shape).ravel(), order[dpos].ravel(),
                np.repeat(np.arange(1, k + 1), self.p))

    def channel_rings(self, k: int, reduce_steps: int, plain_steps: int) -> Estimate:
        """Steps of k concurrent rings, each message n/(kp) elements (the first
        ``reduce_steps`` reduced). Every step has the same messages sharing the same links, so
        the pair of ranks with the dearest message C_max paces each one:
        reduce_steps (C_max + γ n/p) + plain_steps C_max."""
        steps = reduce_steps + plain_steps
        if self.p == 1 or steps == 0:
            return estimate(0.0, steps, 0, 0)
        nb = self.n // (k * self.p) * self.e
        if self.need(contiguous=True, leaves="uniform") is None:
            cmax, crossing = self._channel_cmax(k, nb)
            t = reduce_steps * (cmax + self.gamma * k * nb) + plain_steps * cmax
            return estimate(t, steps, steps * k * nb, steps * crossing * nb)
        net = self.net
        src, dst, j = self.channel_hops(k)
        cls = net.cls(src, dst)
        cmax = float((net.o * j + net.alpha[cls] + nb / net.rates(src, dst, cls)).max())
        x = cls != INTRA
        crossing = int(np.bincount(src[x], minlength=self.p).max()) if x.any() else 0
        t = reduce_steps * (cmax + self.gamma * k * nb) + plain_steps * cmax
        return estimate(t, steps, steps * k * nb, steps * crossing * nb)

    def _channel_cmax(self, k: int, nb: float) -> tuple[float, int]:
        """The dearest message of one step of k channel rings and the most node-crossing
        messages any rank sends, without per-rank arrays (equal nodes in node order, uniform
        leaves). Channel c (j = c+1) crosses from local c mod l; cnt(a) channels cross from local
        a. An intra message from a shares a's port with its k - cnt(a) intra messages; one
        crossing from a shares a's NIC share with its cnt(a) crossings, the node's NICs (and a
        leaf's uplink) with the k crossings of its channel set."""
        net, l, nn = self.net, self.l, self.N  # noqa: E741
        if nn == 1:  # every channel's hop stays in the node: k flows on every port
            return net.o * k + net.alpha[INTRA] + nb * k / net.beta[INTRA], 0
        c = np.arange(k)
        cnt = np.bincount(c % l, minlength=l)
        costs = []
        if l > 1:
            costs.append(net.o * k + net.alpha[INTRA] + nb * (k - cnt.min()) / net.beta[INTRA])
        rate = np.minimum(net.rank_cap[0] / cnt[c % l], net.node_cap / k)
        alpha = net.alpha[INTER]
        if self.leaves > 1:  # the last node of each leaf crosses to the next leaf
            spine = np.minimum(rate, net.up_cap[0] / k)
            costs.append(float((net.o * (c + 1) + net.alpha[SPINE] + nb / spine).max()))
            if self.L == 1:
                rate = spine
                alpha = net.alpha[SPINE]
        if self.leaves == 1 or self.L > 1:
            costs.append(float((net.o * (c + 1) + alpha + nb / rate).max()))
        return max(costs), int(cnt.max())

    def pat(self, reduce: bool) -> Estimate:
        """PAT (p, l powers of two, ranks numbered node by node, one leaf): at distance 2^d each
        rank sends m = p/2^(d+1) one-block messages to one peer; the ranks of a node with
        local index below 2^d (all, from 2^d >= l) cross, and local index 0 (all_gather) or
        l-1 (reduce_scatter) both crosses and receives from inside its node, so it is on the
        step's dearest message every step: Σ_d o (m-1) + max(C_in(mB), C_x(mB)) (+ γ m B)."""
        p, b, net = self.p, self.b, self.net
        t = 0.0
        for d in range((p - 1).bit_length()):
            m, dist = p >> (d + 1), 1 << d
            c = 0.0
            if dist < self.l:
                c = self.intra(m * b)
            if self.N > 1:
                nx = min(dist, self.l)
                c = max(c, net.o + net.alpha[INTER]
                        + m * b / min(net.rank_cap[0], net.node_cap / nx))
            t += net.o * (m - 1) + c + (self.gamma * m * b if reduce else 0.0)
        steps = (p - 1).bit_length()
        return estimate(t, steps, (p - 1) * b, (p - 1) * b * (self.N > 1))
