"""The cost model of :mod:`bench.costmodel.cost`, vectorised over the ranks of each step, on a
schedule compiled once per shape and re-sized per message size.

Most algorithms cut the buffer with ``split(count, K)`` for a K that does not depend on the
count (p blocks, p' blocks, k pipeline chunks, the whole buffer): built on a symbolic count of K
elements, every range of the schedule is a run of atoms, and the real schedule for n elements
is the same with atom i holding ``split(n, K)[i]`` elements (atoms that become empty drop their
messages, as the builder drops zero-length transfers). :data:`SYMBOLIC` says K per algorithm;
tests hold the re-sized evaluation equal to :func:`bench.costmodel.cost.evaluate` on the real
schedule. Algorithms not listed are compiled from their real schedule, per size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bench.costmodel.cost import add
from kernels.algorithm import Algorithm, Problem
from kernels.schedule import Schedule


@dataclass(frozen=True)
class Sym:
    """How to build an algorithm's schedule symbolically: K (count), the itemsize the builder
    must see (pipelined algorithms size their chunks in bytes), and the real elements per atom
    when they are not ``split(n, K)``."""

    count: Callable[[Problem], int]
    itemsize: Callable[[Problem], int] = lambda pr: 1
    atoms: Callable[[Problem, int], np.ndarray] | None = None  # real elements per atom


SYMBOLIC: dict[tuple[str, str], Sym] = {}


@dataclass(frozen=True)
class CStep:
    src: np.ndarray
    dst: np.ndarray
    lo: np.ndarray  # symbolic workspace position of each message's first element
    hi: np.ndarray
    reduce: np.ndarray  # the receive reduces (else it copies)
    first: np.ndarray  # index of the first message of the same sender in this step
    copy_rank: np.ndarray
    copy_lo: np.ndarray
    copy_hi: np.ndarray
    hot_msg: np.ndarray  # per piece of a message its sender wrote earlier: the message's index,
    hot_lo: np.ndarray  # and the piece's symbolic start and stop
    hot_hi: np.ndarray


@dataclass(frozen=True)
class Compiled:
    world: int
    k: int  # symbolic count: atoms per region of the workspace
    steps: tuple[CStep, ...]


def compile_schedules(schedules: Sequence[Schedule], k: int) -> Compiled:
    steps = []
    written: list[list[tuple[int, int]]] = [[] for _ in schedules]  # see bench.costmodel.cost
    for i in range(len(schedules[0].steps) if schedules else 0):
        src, dst, lo, hi, red, first = [], [], [], [], [], []
        cr, clo, chi = [], [], []
        hm, hlo, hhi = [], [], []
        for s, sch in enumerate(schedules):
            st = sch.steps[i]
            start = len(src)
            for snd in st.sends:
                a, b = snd.range.start, snd.range.stop
                for x, y in written[s]:
                    if x < b and y > a:
                        hm.append(len(src)), hlo.append(max(a, x)), hhi.append(min(b, y))
                src.append(s), dst.append(snd.peer), lo.append(a)
                hi.append(b), first.append(start)
            for c in st.copies:
                cr.append(s), clo.append(c.dst.start), chi.append(c.dst.stop)
        for r, sch in enumerate(schedules):
            st = sch.steps[i]
            for rng in [rv.range for rv in st.recvs] + [c.dst for c in st.copies]:
                add(written[r], rng.start, rng.stop)
        reduce_of = _reduce_flags(schedules, i)
        red = [reduce_of[(a, b)].pop(0) for a, b in zip(src, dst)]
        a_src, a_dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        steps.append(CStep(a_src, a_dst, np.asarray(lo, np.int64), np.asarray(hi, np.int64),
                           np.asarray(red, bool), np.asarray(first, np.int64), np.asarray(cr, np.int64),
                           np.asarray(clo, np.int64), np.asarray(chi, np.int64),
                           np.asarray(hm, np.int64), np.asarray(hlo, np.int64),
                           np.asarray(hhi, np.int64)))
    return Compiled(len(schedules), k, tuple(steps))


def _reduce_flags(schedules: Sequence[Schedule], i: int) -> dict[tuple[int, int], list[bool]]:
    """Per (sender, receiver), the receives' reduce flags in posting order."""
    out: dict[tuple[int, int], list[bool]] = {}
    for d, sch in enumerate(schedules):
        for rv in sch.steps[i].recvs:
            out.setdefault((rv.peer, d), []).append(rv.reduce)
    return out


@lru_cache(maxsize=512)
def compiled(alg: Algorithm, problem: Problem, k: int) -> Compiled:
    """``alg``'s schedules for ``problem``, compiled with k atoms per workspace region (cached:
    symbolic shapes recur for every size)."""
    return compile_schedules(alg.schedules(problem), k)
