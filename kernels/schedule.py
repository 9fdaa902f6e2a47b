"""The schedule IR: what an algorithm produces and every executor consumes.

A rank's schedule is a list of steps. In one step a rank posts all its receives and sends at once,
waits for all of them, applies the reductions, then its local copies. Ranges are element ranges
``[start, stop)`` of the rank's **workspace** of ``space`` elements: one buffer per rank in which
the collective places the rank's input and where it expects the output
(:class:`kernels.collective.Layout`; e.g. all_gather in place: rank r's input is block r of the
output). A receive either copies into its range or reduces into it
(``buf[range] = op(buf[range], incoming)``). A local copy moves elements within the rank's own
workspace (``buf[dst] = buf[src]``), for algorithms that rotate or stage blocks (Bruck) and for a
rank's own block of alltoall or sendrecv.

Rules (checked by :func:`validate`):
- every send has its receive on the peer in the same step, matched in posting order per pair, with
  the same number of elements (zero-length transfers are dropped on both sides, so algorithms may
  split ``count`` into empty chunks freely);
- within a step a rank writes no element twice (receives and copy destinations together) and never
  receives into an element it sends (sends read the buffer as it was when the step began);
- copies run after the step's receives and reductions, in the order given, so they read what the
  step delivered; a copy's source and destination do not overlap, and a copy never writes an
  element the rank sends in that step (pull-based executors such as CUDA IPC let peers read the
  send ranges until the step's closing barrier);
- all ranks have the same number of steps (idle ranks have empty steps).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field


class ScheduleError(ValueError):
    """A schedule breaks a rule of the IR (names the rank and step)."""


@dataclass(frozen=True, slots=True)
class Range:
    start: int
    stop: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.stop:
            raise ScheduleError(f"bad range [{self.start}, {self.stop})")

    @property
    def size(self) -> int:
        return self.stop - self.start

    def overlaps(self, other: Range) -> bool:
        if self.size == 0 or other.size == 0:
            return False
        return self.start < other.stop and other.start < self.stop


@dataclass(frozen=True, slots=True)
class Send:
    peer: int
    range: Range


@dataclass(frozen=True, slots=True)
class Recv:
    peer: int
    range: Range
    reduce: bool  # True: buf[range] = op(buf[range], incoming); False: buf[range] = incoming


@dataclass(frozen=True, slots=True)
class Copy:
    """``buf[dst] = buf[src]`` on the rank itself, after the step's receives (same sizes)."""

    src: Range
    dst: Range


@dataclass(frozen=True, slots=True)
class Step:
    sends: tuple[Send, ...] = ()
    recvs: tuple[Recv, ...] = ()
    copies: tuple[Copy, ...] = ()

    def nonempty(self) -> Step:
        """The same step without zero-length transfers (itself when it has none, as every step
        a :class:`StepBuilder` builds)."""
        if all(op.range.size for op in (*self.sends, *self.recvs)) and all(
                c.dst.size for c in self.copies):
            return self
        return Step(
            tuple(s for s in self.sends if s.range.size),
            tuple(r for r in self.recvs if r.range.size),
            tuple(c for c in self.copies if c.dst.size),
        )

    @property
    def idle(self) -> bool:
        return not (self.sends or self.recvs or self.copies)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One rank's program for one collective among ``world`` ranks on a workspace of ``space``
    elements."""

    rank: int
    world: int
    space: int
    steps: tuple[Step, ...] = field(default_factory=tuple)


class StepBuilder:
    """Accumulates the steps of all ranks of a global schedule, then freezes them.

    Algorithms describe transfers globally (``move(src, dst, range, reduce)``) which keeps the two
    sides of every message consistent by construction; :func:`validate` still checks the result.

    With ``only=r`` it keeps just rank ``r``'s side of each move, so a rank of a large job
    builds its own schedule in O(steps x moves) cheap calls without holding everyone's.
    """

    def __init__(self, world: int, space: int, only: int | None = None) -> None:
        self.world = world
        self.space = space
        self.only = only
        self._steps: list[dict[int, tuple[list[Send], list[Recv], list[Copy]]]] = []

    def step(self) -> int:
        """Open a new global step and return its index."""
        self._steps.append({})
        return len(self._steps) - 1

    def _slot(self, step: int, rank: int) -> tuple[list[Send], list[Recv], list[Copy]]:
        per_rank = self._steps[step]
        got = per_rank.get(rank)
        if got is None:  # not setdefault: that would build three lists on every call
            got = per_rank[rank] = ([], [], [])
        return got

    def move(self, src: int, dst: int, rng: Range, *, reduce: bool, step: int = -1) -> None:
        if rng.stop == rng.start:  # empty
            return
        only = self.only
        if only is None or only == src:
            self._slot(step, src)[0].append(Send(dst, rng))
        if only is None or only == dst:
            self._slot(step, dst)[1].append(Recv(src, rng, reduce))

    def move_to(self, src: int, dst: int, src_rng: Range, dst_rng: Range, *, reduce: bool,
                step: int = -1) -> None:
        """A message read from ``src_rng`` of ``src`` landing in ``dst_rng`` of ``dst`` (the
        same number of elements; alltoall and sendrecv move blocks between regions)."""
        if src_rng.size != dst_rng.size:
            raise ScheduleError(f"move of {src_rng.size} elements into {dst_rng.size}")
        if src_rng.size == 0:
            return
        if self.only is None or self.only == src:
            self._slot(step, src)[0].append(Send(dst, src_rng))
        if self.only is None or self.only == dst:
            self._slot(step, dst)[1].append(Recv(src, dst_rng, reduce))

    def copy(self, rank: int, src: Range, dst: Range, *, step: int = -1) -> None:
        """A local copy on ``rank`` after the step's receives: ``buf[dst] = buf[src]``."""
        if src.size != dst.size:
            raise ScheduleError(f"copy of {src.size} elements into {dst.size}")
        if src.size and (self.only is None or self.only == rank):
            self._slot(step, rank)[2].append(Copy(src, dst))

    def build(self, rank: int) -> Schedule:
        if self.only is not None and rank != self.only:
            raise ValueError(f"builder kept only rank {self.only}")
        steps, idle = [], Step((), (), ())  # frozen: one shared by the steps the rank idles
        for per_rank in self._steps:
            got = per_rank.get(rank)
            steps.append(idle if got is None else Step(tuple(got[0]), tuple(got[1]),
                                                       tuple(got[2])))
        # Step indices are the contract between ranks, so every rank keeps every step.
        return Schedule(rank, self.world, self.space, tuple(steps))

    def build_all(self) -> list[Schedule]:
        return [self.build(r) for r in range(self.world)]


def validate(schedules: Sequence[Schedule]) -> None:
    """Raise :class:`ScheduleError` naming the first broken rule, else return None."""
    if not schedules:
        raise ScheduleError("no schedules")
    world, space = schedules[0].world, schedules[0].space
    if len(schedules) != world:
        raise ScheduleError(f"{len(schedules)} schedules for world size {world}")
    nsteps = len(schedules[0].steps)
    for r, sch in enumerate(schedules):
        if sch.rank != r or sch.world != world or sch.space != space:
            raise ScheduleError(f"rank {r}: schedule header {sch.rank}/{sch.world}/{sch.space}")
        if len(sch.steps) != nsteps:
            raise ScheduleError(f"rank {r}: {len(sch.steps)} steps, rank 0 has {nsteps}")
    for i in range(nsteps):
        steps = [sch.steps[i].nonempty() for sch in schedules]
        for r, st in enumerate(steps):
            if st.sends or st.recvs or st.copies:
                _check_local(r, i, st, world, space)
        _check_matching(i, steps)


def _check_local(rank: int, i: int, st: Step, world: int, space: int) -> None:
    for op in (*st.sends, *st.recvs):
        if not 0 <= op.peer < world or op.peer == rank:
            raise ScheduleError(f"step {i} rank {rank}: bad peer {op.peer}")
        if op.range.stop > space:
            raise ScheduleError(f"step {i} rank {rank}: range {op.range} beyond space {space}")
    for c in st.copies:
        if max(c.src.stop, c.dst.stop) > space:
            raise ScheduleError(f"step {i} rank {rank}: copy {c} beyond space {space}")
        if c.src.size != c.dst.size or c.src.overlaps(c.dst):
            raise ScheduleError(f"step {i} rank {rank}: copy {c.src} -> {c.dst} overlaps or differs")
    if len(st.recvs) + len(st.copies) > 1:
        writes = sorted([(r.range.start, r.range.stop) for r in st.recvs]
                        + [(c.dst.start, c.dst.stop) for c in st.copies])
        for (_, a_stop), (b_start, _) in itertools.pairwise(writes):
            if b_start < a_stop:
                raise ScheduleError(f"step {i} rank {rank}: an element is written twice")
    if len(st.sends) * (len(st.recvs) + len(st.copies)) > 4 and not _sends_meet_writes(st):
        return  # many ranges, none met: one sorted sweep instead of every pair
    writes = [("receiving", r.range) for r in st.recvs] + [("copying", c.dst) for c in st.copies]
    for s in st.sends:
        for how, w in writes:
            if s.range.overlaps(w):
                raise ScheduleError(f"step {i} rank {rank}: sends {s.range} while {how} into {w}")


def _sends_meet_writes(st: Step) -> bool:
    """Whether some send range overlaps some receive or copy destination (all non-empty)."""
    spans = sorted([(s.range.start, s.range.stop, True) for s in st.sends]
                   + [(r.range.start, r.range.stop, False) for r in st.recvs]
                   + [(c.dst.start, c.dst.stop, False) for c in st.copies])
    reach = {True: -1, False: -1}  # the furthest stop of the sends, and of the writes, so far
    for start, stop, is_send in spans:
        if start < reach[not is_send]:
            return True
        reach[is_send] = max(reach[is_send], stop)
    return False


def _check_matching(i: int, steps: Sequence[Step]) -> None:
    sent: dict[tuple[int, int], list[int]] = {}
    got: dict[tuple[int, int], list[int]] = {}
    for rank, st in enumerate(steps):
        for s in st.sends:
            sent.setdefault((rank, s.peer), []).append(s.range.stop - s.range.start)
        for r in st.recvs:
            got.setdefault((r.peer, rank), []).append(r.range.stop - r.range.start)
    if sent != got:  # one pass for the usual case; the rule that broke is named below
        _name_mismatch(i, steps)


def _name_mismatch(i: int, steps: Sequence[Step]) -> None:
    for src, st in enumerate(steps):
        by_peer: dict[int, list[int]] = {}
        for s in st.sends:
            by_peer.setdefault(s.peer, []).append(s.range.size)
        for dst, sizes in by_peer.items():
            got = [r.range.size for r in steps[dst].recvs if r.peer == src]
            if got != sizes:
                raise ScheduleError(
                    f"step {i}: rank {src} sends {sizes} elements to rank {dst}, "
                    f"which receives {got} from it"
                )
    for dst, st in enumerate(steps):
        for r in st.recvs:
            if not any(s.peer == dst for s in steps[r.peer].sends):
                raise ScheduleError(f"step {i}: rank {dst} receives from {r.peer}, which never sends")
