"""Schedules compiled to arrays: every step's messages as numpy columns, for the cost model's
evaluator (``bench.costmodel.evaluate``), which prices them at any size.

Most algorithms cut the buffer with ``split(count, K)`` for a K that does not depend on the
count (p blocks, p' blocks, k pipeline chunks, the whole buffer): built on a symbolic count of K
elements, every range of the schedule is a run of atoms, and the real schedule for n elements
is the same with atom i holding ``split(n, K)[i]`` elements (atoms that become empty drop their
messages, as the builder drops zero-length transfers). An algorithm declares that K as its
:class:`Shape` beside its ``build``; the tests hold the re-sized evaluation equal to the plain
evaluation of the real schedule. An algorithm without one is compiled from its real schedule.

Hot bytes: per message, the pieces its sender wrote earlier in the same call (received, reduced
into or copied to in an earlier step); the evaluator prices them when a profile says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kernels.schedule import Schedule

if TYPE_CHECKING:
    from kernels.problem import Problem


@dataclass(frozen=True)
class Shape:
    """How to build an algorithm's schedule symbolically: K (the count), the itemsize the
    builder must see (pipelined algorithms size their chunks in bytes), and the real elements
    per atom when they are not ``split(n, K)``."""

    count: Callable[[Problem], int]
    itemsize: Callable[[Problem], int] = lambda pr: 1
    atoms: Callable[[Problem, int], np.ndarray] | None = None  # real elements per atom
    # the symbolic build already compiled, generated with numpy (no hot bytes recorded): the
    # tests hold it equal to compile_schedules of the build, array by array
    generate: Callable[[Problem], Compiled] | None = None


WHOLE = Shape(count=lambda pr: 1)  # every range is the whole buffer
BLOCKS = Shape(count=lambda pr: pr.world)  # ranges are runs of the p blocks
POW2_BLOCKS = Shape(count=lambda pr: 1 << (pr.world.bit_length() - 1))  # p' = 2^floor(log2 p)


def pipelined(chunks: Callable[[int, int], int], chunk_bytes: int) -> Shape:
    """k chunks of a pipelined algorithm (``chunks(count, itemsize)``), each ``chunk_bytes``
    as its builder sees them."""
    return Shape(count=lambda pr: chunks(pr.count, pr.itemsize), itemsize=lambda pr: chunk_bytes)


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


_NONE = np.zeros(0, dtype=np.int64)


def messages(src: np.ndarray, dst: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             red: np.ndarray, slot: np.ndarray) -> CStep:
    """One step of messages generated with numpy (a closed form's own generator), grouped by
    sender in posting order (``slot`` orders a sender's); no copies, no hot bytes recorded."""
    idx = np.lexsort((slot, src))
    src, dst, lo, hi, red = src[idx], dst[idx], lo[idx], hi[idx], red[idx]
    starts = np.searchsorted(src, src, side="left")
    return CStep(src, dst, lo, hi, red.astype(bool), starts, _NONE, _NONE, _NONE, _NONE, _NONE,
                 _NONE)


def runs(src: np.ndarray, dst: np.ndarray, key: np.ndarray, atom: np.ndarray, red: bool
         ) -> CStep:
    """:func:`kernels.phases.move_runs` generated with numpy for a whole step of a symbolic build
    on one-atom blocks: the elements sharing a ``key`` (with one sender and receiver) are one
    call's atoms, the keys ordering each sender's calls as posted; one message per run of
    adjacent atoms, a call's runs posted in ascending order."""
    if not atom.size:
        return messages(_NONE, _NONE, _NONE, _NONE, np.zeros(0, bool), _NONE)
    idx = np.lexsort((atom, key))
    a, k = atom[idx], key[idx]
    brk = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (a[1:] != a[:-1] + 1)])
    last = np.r_[brk[1:], a.size] - 1
    return messages(src[idx][brk], dst[idx][brk], a[brk], a[last] + 1, np.full(brk.size, red),
                    np.arange(brk.size))


def add(spans: list[tuple[int, int]], lo: int, hi: int) -> None:
    """Merge [lo, hi) into the sorted disjoint ``spans`` in place."""
    if hi <= lo:
        return
    keep = [(a, b) for a, b in spans if b < lo or a > hi]
    for a, b in spans:
        if not (b < lo or a > hi):
            lo, hi = min(lo, a), max(hi, b)
    spans[:] = sorted([*keep, (lo, hi)])


def compile_schedules(schedules: Sequence[Schedule], k: int, hot: bool = True) -> Compiled:
    """Every rank's schedule as arrays; ``k``: atoms per workspace region (the symbolic count,
    or the real count when built on the real schedule). ``hot``: also record the hot bytes of
    each message (without, the hot arrays are empty: for a profile that prices no hot sends,
    whose evaluator never reads them; tracking what each rank wrote is most of the work)."""
    steps = []
    written: list[list[tuple[int, int]]] = [[] for _ in schedules]  # per rank, disjoint, sorted
    for i in range(len(schedules[0].steps) if schedules else 0):
        src, dst, lo, hi, first = [], [], [], [], []
        cr, clo, chi = [], [], []
        hm, hlo, hhi = [], [], []
        for s, sch in enumerate(schedules):
            st = sch.steps[i]
            start = len(src)
            for snd in st.sends:
                a, b = snd.range.start, snd.range.stop
                for x, y in written[s] if hot else ():
                    if x < b and y > a:
                        hm.append(len(src)), hlo.append(max(a, x)), hhi.append(min(b, y))
                src.append(s), dst.append(snd.peer), lo.append(a)
                hi.append(b), first.append(start)
            for c in st.copies:
                cr.append(s), clo.append(c.dst.start), chi.append(c.dst.stop)
        for r, sch in enumerate(schedules if hot else ()):
            st = sch.steps[i]
            for rng in [rv.range for rv in st.recvs] + [c.dst for c in st.copies]:
                add(written[r], rng.start, rng.stop)
        reduce_of = _reduce_flags(schedules, i)
        red = [reduce_of[(a, b)].pop(0) for a, b in zip(src, dst)]
        ints = [np.asarray(v, np.int64) for v in (src, dst, lo, hi)]
        steps.append(CStep(*ints, np.asarray(red, bool),
                           *(np.asarray(v, np.int64) for v in (first, cr, clo, chi, hm, hlo, hhi))))
    return Compiled(len(schedules), k, tuple(steps))


def _reduce_flags(schedules: Sequence[Schedule], i: int) -> dict[tuple[int, int], list[bool]]:
    """Per (sender, receiver), the receives' reduce flags in posting order."""
    out: dict[tuple[int, int], list[bool]] = {}
    for d, sch in enumerate(schedules):
        for rv in sch.steps[i].recvs:
            out.setdefault((rv.peer, d), []).append(rv.reduce)
    return out
