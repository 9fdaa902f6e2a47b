"""Closed forms of the all-to-all-shaped algorithms: direct, pairwise, Bruck alltoall.

One-step algorithms (direct): every rank posts p-1 sends at once; the dearest message is the
last one posted (o (p-1)) of the dearest class present, every class sharing its resources with
all the step's flows of that class. Shift steps (pairwise, direct reduce_scatter, Bruck): in
the step at offset k every rank sends to the rank k places on; on equal nodes of l ranks, a
node's ranks split into those that stay on the node and those that cross, the same on every
node, so the step costs its dearest class and the steps add up (tested equal to the schedule
model, which also checks that the latest rank always meets the dearest message).
"""

from __future__ import annotations

import numpy as np

from bench.costmodel.closed import Ctx, closed, estimate
from bench.costmodel.cost import Estimate
from bench.costmodel.model import INTER, INTRA, SPINE


def _one_step(x: Ctx, b: float) -> float:
    """Every rank sends one message of ``b`` bytes to every other rank, in offset order."""
    p, l = x.p, x.l  # noqa: E741
    used = x.net.placed.classes_used()
    costs = []
    if "intra" in used:
        costs.append(x.intra(b, l - 1, j=p - 1))
    out = p - l
    if "inter" in used:
        costs.append(x.cross(INTER, b, out, l * out, j=p - 1))
    if "spine" in used:
        costs.append(x.cross(SPINE, b, out, l * out, x.l * x.L * (p - x.l * x.L), j=p - 1))
    return max(costs, default=0.0)


@closed("all_gather", "direct")
def direct_allgather(x: Ctx) -> Estimate | str:
    """One step: max over link classes of o (p-1) + α + B x (flows sharing the class's
    resources) / capacity. Every rank sends its input: nothing hot."""
    why = x.need(leaves="uniform", hot=True)
    if why:
        return why
    b = x.n // x.p * x.e
    if x.p == 1:
        return estimate(0.0, 0, 0, 0)
    return estimate(_one_step(x, b), 1, (x.p - 1) * b, (x.p - x.l) * b)


@closed("alltoall", "direct")
def direct_alltoall(x: Ctx) -> Estimate | str:
    """As direct all_gather (send j is to rank j, so the last is at position p-1), plus the
    local copy of the rank's own block. Every rank sends its input: nothing hot."""
    why = x.need(contiguous=True, leaves="uniform", hot=True)
    if why:
        return why
    b = x.n // x.p * x.e
    return estimate(_one_step(x, b) + x.net.copy_time(b), 1, (x.p - 1) * b, (x.p - x.l) * b)


def _shift_costs(x: Ctx, offsets: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cost of each shift step (every rank sends ``nbytes`` to the rank ``offset`` on) and
    whether local index a's message crosses nodes, as a (steps, l) array."""
    l, nn = x.l, x.N  # noqa: E741
    q, m = np.divmod(offsets, l)
    far_lo, far_hi = (q % nn) != 0, ((q + 1) % nn) != 0  # ranks a < l-m / a >= l-m cross?
    nx = (l - m) * far_lo + m * far_hi
    has_in = ((l - m) * ~far_lo + m * ~far_hi) > 0
    cin = np.where(has_in, x.net.o + x.net.alpha[INTRA] + nbytes / x.net.beta[INTRA], 0.0)
    if nn > 1:
        rate = np.minimum(x.net.rank_cap[0], x.net.node_cap / np.maximum(nx, 1))
        cx = np.where(nx > 0, x.net.o + x.net.alpha[INTER] + nbytes / rate, 0.0)
    else:
        cx = np.zeros_like(cin)
    a = np.arange(l)
    crosses = np.where(a[None, :] < (l - m)[:, None], far_lo[:, None], far_hi[:, None])
    return np.maximum(cin, cx), crosses


def _shift_need(x: Ctx, contiguous: bool) -> str | None:
    """Pairwise and direct reduce_scatter send their input (nothing hot); Bruck sends what its
    local steps packed (every byte hot): each prices its own."""
    return x.need(contiguous=contiguous, leaves="one", hot=True)


@closed("alltoall", "pairwise")
def pairwise(x: Ctx) -> Estimate | str:
    """p-1 shift steps of one block (offsets 1..p-1), plus the first step's local copy."""
    why = _shift_need(x, contiguous=True)
    if why:
        return why
    b, total, inter = _one_block_shifts(x)
    return estimate(total + x.net.copy_time(b), max(x.p - 1, 1), (x.p - 1) * b, inter)


@closed("reduce_scatter", "direct")
def direct_reduce_scatter(x: Ctx) -> Estimate | str:
    """p-1 shift steps (in node order) of one block, reduced: sum of (C_k + γB)."""
    why = _shift_need(x, contiguous=False)
    if why:
        return why
    b, total, inter = _one_block_shifts(x)
    return estimate(total + (x.p - 1) * x.gamma * b, x.p - 1, (x.p - 1) * b, inter)


def _one_block_shifts(x: Ctx) -> tuple[int, float, float]:
    """p-1 shifts (offsets 1..p-1) of one n/p block: (block bytes, summed step costs, the most
    bytes any rank sends across nodes)."""
    b = x.n // x.p * x.e
    k = np.arange(1, x.p)
    costs, crosses = _shift_costs(x, k, np.full(k.shape, float(b)))
    inter = float(crosses.sum(axis=0).max()) * b if x.p > 1 else 0.0
    return b, float(costs.sum()), inter


@closed("alltoall", "bruck")
def bruck_alltoall(x: Ctx) -> Estimate | str:
    """A local step copying p + m_1 blocks, then per d = 1, 2, 4, ... < p a shift by d of the
    m_d slots with bit d set with copies unpacking them, and a local step packing the next m_2d
    (2 ceil(log2 p) steps; every rank does the same)."""
    why = _shift_need(x, contiguous=True)
    if why:
        return why
    p, b = x.p, x.n // x.p * x.e
    ds = np.array([1 << i for i in range((p - 1).bit_length())], dtype=np.int64)
    j = np.arange(p)
    m = np.array([int(((j & d) != 0).sum()) for d in ds], dtype=np.int64)
    t = x.net.copy_time((p + (m[0] if len(m) else 0)) * b)
    inter = 0.0
    if len(ds):
        costs, crosses = _shift_costs(x, ds, m * float(b))
        nxt = np.append(m[1:], 0)
        t += float(costs.sum()) + x.hot * float(m.sum()) * b  # it sends what it packed: hot
        t += sum(x.net.copy_time((a + c) * b) for a, c in zip(m, nxt))
        inter = float((crosses * m[:, None]).sum(axis=0).max()) * b
    return estimate(t, max(1, 2 * len(ds)), int(m.sum()) * b, inter)
