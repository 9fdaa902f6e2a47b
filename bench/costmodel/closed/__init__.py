"""Closed forms of the cost model, per (collective, algorithm): the schedule-evaluated time
without building any schedule, for the large p where building p schedules is too slow.

A closed form returns an :class:`~bench.costmodel.cost.Estimate`, or a string saying why it does not
apply to this problem (uneven chunks, uneven nodes, a spine level it does not model, ...): the
predictor then evaluates the schedule, or skips the case with that reason. Each one is tested
equal to :func:`bench.costmodel.cost.evaluate` on the real schedules for p <= 128 on flat, two-level
and three-level topologies (``tests/test_costmodel.py``); nothing here is trusted unchecked.
They live here, keyed by (collective, algorithm), rather than in the algorithm files; they could
move next to each algorithm's ``build`` later.

Notation: p ranks, N nodes of l ranks, L nodes per leaf; c = the block or chunk in elements,
B its bytes; C(...) a message's cost from :class:`bench.costmodel.net.Net`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bench.costmodel.compiled import Compiled
from bench.costmodel.cost import Estimate
from bench.costmodel.model import INTER, INTRA, SPINE
from bench.costmodel.net import Net
from kernels.algorithm import Problem

ClosedForm = Callable[["Ctx"], "Estimate | Job | str"]
CLOSED: dict[tuple[str, str], ClosedForm] = {}


def closed(collective: str, algorithm: str) -> Callable[[ClosedForm], ClosedForm]:
    def deco(fn: ClosedForm) -> ClosedForm:
        CLOSED[(collective, algorithm)] = fn
        return fn

    return deco


@dataclass(frozen=True)
class Job:
    """A generated schedule to evaluate (:mod:`bench.costmodel.closed.generated`): the predictor
    evaluates the sizes that share one in a single batch."""

    comp: Compiled
    atoms: np.ndarray | None = None
    method: str = "generated"
    count: int | None = None  # the count to evaluate with (default: the problem's)

    def run(self, problem: Problem, net: Net) -> Estimate:
        from bench.costmodel.evaluate import evaluate

        e = evaluate(self.comp, net, self.count or problem.count, problem.itemsize, self.atoms)
        return Estimate(e.time_s, e.steps, e.bytes_sent_max, e.bytes_inter_max, self.method)


def estimate(t: float, steps: int, sent: float, inter: float) -> Estimate:
    return Estimate(float(t), int(steps), round(sent), round(inter), "closed form")


@dataclass(frozen=True)
class Ctx:
    problem: Problem
    net: Net

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
    def hot(self) -> float:
        return self.net.hot

    def need(self, *, equal: bool = True, contiguous: bool = False, leaves: str = "any",
             pow2_p: bool = False, pow2_l: bool = False, divides: int = 1,
             hot: bool = False) -> str | None:
        """Why this closed form does not apply, or None. ``leaves``: any | uniform | pow2
        (uniform and L a power of two) | one (no spine level). ``hot``: the form prices hot
        sends (:mod:`bench.costmodel.cost`); those that do not decline a profile with them."""
        pl = self.net.placed
        if self.net.hot and not hot:
            return "the profile prices hot sends (hot_send_s_per_byte), this form does not"
        if equal and not pl.equal_nodes:
            return "uneven nodes"
        if contiguous and not pl.contiguous:
            return "ranks not numbered node by node"
        if pow2_p and self.p & (self.p - 1):
            return "p not a power of two"
        if pow2_l and self.l & (self.l - 1):
            return "ranks per node not a power of two"
        if self.n % divides:
            return f"count {self.n} not a multiple of {divides} (uneven chunks)"
        if leaves == "one" and self.leaves > 1:
            return "several leaf switches"
        if leaves in ("uniform", "pow2") and self.leaves > 1 and not pl.uniform_leaves:
            return "leaves hold different numbers of nodes"
        if leaves == "pow2" and self.leaves > 1 and self.L & (self.L - 1):
            return "nodes per leaf not a power of two"
        return None

    def intra(self, nbytes: float, flows: float = 1, j: int = 1) -> float:
        return self.net.c_intra(nbytes, flows, j)

    def cross(self, cls: int, nbytes: float, rank_flows: float = 1, node_flows: float = 1,
              leaf_flows: float = 1, j: int = 1) -> float:
        return self.net.c_cross(cls, nbytes, rank_flows, node_flows, leaf_flows, j)

    def by_distance(self, d: int, nbytes: float, reduce: bool = False) -> tuple[float, bool]:
        """Cost of the step where every rank exchanges ``nbytes`` with the rank ``d`` places
        away in node order (d a power of two, l and L powers of two or one node/leaf), and
        whether it crosses nodes. All l ranks of a node cross together; all l*L of a leaf."""
        if d < self.l:
            c, x = self.intra(nbytes), False
        elif self.leaves > 1 and d >= self.l * self.L:
            c, x = self.cross(SPINE, nbytes, 1, self.l, self.l * self.L), True
        else:
            c, x = self.cross(INTER, nbytes, 1, self.l), True
        return c + (self.gamma * nbytes if reduce else 0.0), x

    @property
    def order(self) -> tuple[int, ...]:
        """Ranks node by node (``kernels.phases.node_order``), from the placed job."""
        return self.net.placed.order

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
        costs = list(self.edge_costs(nbytes, flows, wrap))
        if max(self.net.placed.node_sizes) > 1:
            costs.append(self.intra(nbytes))
        return max(costs, default=0.0)


__all__ = ["CLOSED", "INTER", "INTRA", "SPINE", "Ctx", "Job", "closed", "estimate"]
