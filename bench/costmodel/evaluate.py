"""The cost model's one evaluator: the time of a schedule compiled to arrays
(:mod:`kernels.compiled`), vectorised over the ranks of each step and over message sizes; the
model it prices (event-driven, no barrier per step; o, α, β, γ, hot sends, the MPI switch, local
copies) is docs/predict.md, "The cost model". Only this evaluator prices hot sends and the MPI
switch (closed forms decline such a profile).

:func:`prepare` does once what no profile changes, so a fit re-prices the same points cheaply
with :func:`run`; :func:`schedule_job` compiles an algorithm once per symbolic shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bench.costmodel.model import INTRA, SPINE, Placed
from bench.costmodel.net import Net, flows
from kernels.algorithm import Algorithm, Problem
from kernels.closed import Estimate
from kernels.compiled import Compiled, compile_schedules


def prefix(n: int | np.ndarray, k: int, positions: np.ndarray,
           atoms: np.ndarray | None = None) -> np.ndarray:
    """Real workspace position of symbolic positions: region q = x // k holds n elements, atom
    i of a region ``split(n, k)[i]`` elements (or ``atoms[i]``). ``n`` may be a column of
    counts: one row per count."""
    q, x = np.divmod(positions, k)
    if atoms is not None:
        cum = np.concatenate(([0], np.cumsum(atoms)))
        return q * n + cum[x]
    base, extra = np.divmod(n, k)
    return q * n + x * base + np.minimum(x, extra)


@dataclass(frozen=True)
class PStep:
    s: np.ndarray
    d: np.ndarray
    cls: np.ndarray
    j: np.ndarray  # position among the sender's messages of the step, from 1
    nbytes: np.ndarray  # (rows, messages)
    red: np.ndarray  # the receiver reduces
    flows: tuple[np.ndarray, ...]  # per message: how many flows share each resource (net.flows)
    copy: np.ndarray | None  # (rows, p) bytes copied per rank
    hot: np.ndarray | None  # (rows, messages) bytes the sender wrote earlier in the call


@dataclass(frozen=True)
class Prepared:
    world: int
    steps: tuple[PStep, ...]
    nsteps: int
    sent: np.ndarray  # (rows,) most bytes any rank sends
    inter: np.ndarray  # (rows,) most bytes any rank sends across nodes


def prepare(comp: Compiled, placed: Placed, counts: Sequence[int], itemsize: int,
            atoms: np.ndarray | None = None, hot: bool = True) -> Prepared:
    """Everything of ``comp`` at these counts that no profile changes (``hot``: with each
    message's hot bytes). Empty messages are dropped: the counts must agree on which they are."""
    p, rows = comp.world, len(counts)
    n = np.asarray(counts, dtype=np.int64)[:, None]
    node = np.asarray(placed.node_of, dtype=np.int64)
    leaf = np.asarray(placed.leaf_of, dtype=np.int64)[node]
    sent, inter = np.zeros((rows, p)), np.zeros((rows, p))
    base = np.arange(rows)[:, None] * p
    steps = []
    for st in comp.steps:
        nbytes = ((prefix(n, comp.k, st.hi, atoms) - prefix(n, comp.k, st.lo, atoms))
                  * itemsize).astype(np.float64)
        act = nbytes[0] > 0
        if ((nbytes > 0) != act).any():
            raise ValueError("counts disagree on which messages are empty")
        cum = np.cumsum(act)
        j = (cum - (cum - act)[st.first])[act]
        s, d, b = st.src[act], st.dst[act], nbytes[:, act]
        cls = np.where(node[s] == node[d], INTRA, np.where(leaf[s] == leaf[d], 1, SPINE))
        copy = None
        if st.copy_rank.size:
            cb = ((prefix(n, comp.k, st.copy_hi, atoms) - prefix(n, comp.k, st.copy_lo, atoms))
                  * itemsize).astype(np.float64)
            copy = _rowsum(base, st.copy_rank, cb, p)
        hot_bytes = None
        if hot and st.hot_msg.size:
            hb = ((prefix(n, comp.k, st.hot_hi, atoms) - prefix(n, comp.k, st.hot_lo, atoms))
                  * itemsize).astype(np.float64)
            m = st.src.size
            hot_bytes = _rowsum(np.arange(rows)[:, None] * m, st.hot_msg, hb, m)[:, act]
        steps.append(PStep(s, d, cls, j.astype(np.float64), b, st.reduce[act],
                           flows(s, d, cls, placed, node, leaf), copy, hot_bytes))
        sent += _rowsum(base, s, b, p)
        x = cls != INTRA
        inter += _rowsum(base, s[x], b[:, x], p)
    return Prepared(p, tuple(steps), len(comp.steps), sent.max(axis=1) if p else np.zeros(rows),
                    inter.max(axis=1) if p else np.zeros(rows))


def run(prep: Prepared, net: Net) -> np.ndarray:
    """The collective's time for each prepared count, priced by ``net``'s profile."""
    p, rows = prep.world, prep.sent.shape[0]
    base = np.arange(rows)[:, None] * p
    ready = np.zeros((rows, p))
    for st in prep.steps:
        new = ready.copy()
        if st.s.size:
            rate = net.rate(st.s, st.d, st.cls, st.flows)
            cost = net.o * st.j + net.alpha[st.cls] + st.nbytes / rate
            if net.hot and st.hot is not None:
                cost = cost + net.hot * st.hot
            if net.mpi is not None:
                cost = cost + net.protocol(st.nbytes)
            done = np.maximum(ready[:, st.s], ready[:, st.d]) + cost
            flat = new.reshape(-1)
            np.maximum.at(flat, (base + st.s).ravel(), done.ravel())
            np.maximum.at(flat, (base + st.d).ravel(), done.ravel())
            if net.gamma and st.red.any():
                new += net.gamma * _rowsum(base, st.d[st.red], st.nbytes[:, st.red], p)
        if st.copy is not None and net.copies_cost:
            new += net.copy_time(st.copy)
        ready = new
    return ready.max(axis=1) if p else np.zeros(rows)


def _rowsum(base: np.ndarray, idx: np.ndarray, weights: np.ndarray, p: int) -> np.ndarray:
    """Per row, the sum of ``weights`` landing on each rank of ``idx``."""
    rows = base.shape[0]
    return np.bincount((base + idx).ravel(), weights=weights.ravel(),
                       minlength=rows * p).reshape(rows, p)


def batches(comp: Compiled, placed: Placed, counts: Sequence[int], itemsize: int,
            atoms: np.ndarray | None = None, hot: bool = True) -> list[tuple[list[int], Prepared]]:
    """``comp`` prepared for ``counts``, a batch per pattern of empty messages: (indices, prepared)."""
    if atoms is not None and len(counts) != 1:
        raise ValueError("atoms are per count: evaluate one count at a time")
    groups: dict[bytes, list[int]] = {b"": [0]} if len(counts) == 1 else {}  # one: no key needed
    if len(counts) > 1:  # atoms is None: each count's nonempty messages, all counts at once
        n = np.asarray(counts, dtype=np.int64)[:, None]
        full = np.concatenate([np.zeros((len(counts), 0), bool),
                               *(prefix(n, comp.k, st.hi) > prefix(n, comp.k, st.lo)
                                 for st in comp.steps)], axis=1)
        for i, row in enumerate(np.packbits(full, axis=1)):
            groups.setdefault(row.tobytes(), []).append(i)
    return [(idx, prepare(comp, placed, [counts[i] for i in idx], itemsize, atoms, hot))
            for idx in groups.values()]


def evaluate_batch(comp: Compiled, net: Net, counts: Sequence[int], itemsize: int,
                   atoms: np.ndarray | None = None, method: str = "schedule") -> list[Estimate]:
    """Predicted times of ``comp`` for several counts, each batch of :func:`batches` at once."""
    out: list[Estimate | None] = [None] * len(counts)
    for idx, prep in batches(comp, net.placed, counts, itemsize, atoms, bool(net.hot)):
        times = run(prep, net)
        for r, i in enumerate(idx):
            out[i] = Estimate(float(times[r]), prep.nsteps, int(prep.sent[r]), int(prep.inter[r]),
                              method)
    return [e for e in out if e is not None]


def evaluate(comp: Compiled, net: Net, count: int, itemsize: int,
             atoms: np.ndarray | None = None, method: str = "schedule") -> Estimate:
    """Predicted time of the compiled schedule with ``count`` real elements."""
    return evaluate_batch(comp, net, [count], itemsize, atoms, method)[0]


@lru_cache(maxsize=512)
def compiled(alg: Algorithm, problem: Problem, k: int, hot: bool = True) -> Compiled:
    """``alg``'s schedules for ``problem``, compiled with k atoms per workspace region (cached:
    symbolic shapes recur for every size); ``hot``: with each message's hot bytes."""
    return compile_schedules(alg.schedules(problem), k, hot)


def schedule_job(alg: Algorithm, problem: Problem, hot: bool = True
                 ) -> tuple[Compiled, np.ndarray | None, int]:
    """``alg``'s compiled schedule for ``problem`` (symbolic once per shape where it declares
    one), its atoms (None: ``split(count, K)``) and the count to evaluate it with; ``hot``: the
    evaluation prices hot sends."""
    sym = alg.shape
    if sym is None:
        return compiled(alg, problem, problem.space, hot), None, problem.space
    shape = Problem(problem.topology, sym.count(problem), sym.itemsize(problem),
                    problem.collective, problem.root)
    atoms = sym.atoms(problem, problem.count) if sym.atoms else None
    if sym.generate is not None and not hot:
        return generated(alg, shape), atoms, problem.count
    return compiled(alg, shape, shape.count, hot), atoms, problem.count


@lru_cache(maxsize=512)
def generated(alg: Algorithm, shape: Problem) -> Compiled:
    """``alg``'s symbolic build on ``shape`` as its :class:`~kernels.compiled.Shape` generates
    it with numpy (no hot bytes; cached like :func:`compiled`)."""
    assert alg.shape is not None and alg.shape.generate is not None
    return alg.shape.generate(shape)


def schedule_estimate(alg: Algorithm, problem: Problem, net: Net) -> Estimate:
    """Evaluate ``alg`` on ``problem`` (see :func:`schedule_job`)."""
    comp, atoms, count = schedule_job(alg, problem, bool(net.hot))
    return evaluate(comp, net, count, problem.itemsize, atoms)
