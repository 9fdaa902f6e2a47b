"""The schedule IR: what an algorithm produces and every executor consumes.

A rank's schedule is a list of steps. In one step a rank posts all its receives and sends at once,
waits for all of them, then applies the reductions. Ranges are element ranges ``[start, stop)`` of
the rank's buffer of ``count`` elements. A receive either copies into its range or reduces into it
(``buf[range] = op(buf[range], incoming)``).

Rules (checked by :func:`validate`):
- every send has its receive on the peer in the same step, matched in posting order per pair, with
  the same number of elements (zero-length transfers are dropped on both sides, so algorithms may
  split ``count`` into empty chunks freely);
- within a step a rank writes no element twice and never receives into an element it sends
  (sends read the buffer as it was when the step began);
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
class Step:
    sends: tuple[Send, ...] = ()
    recvs: tuple[Recv, ...] = ()

    def nonempty(self) -> Step:
        """The same step without zero-length transfers."""
        return Step(
            tuple(s for s in self.sends if s.range.size),
            tuple(r for r in self.recvs if r.range.size),
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    """One rank's program for one AllReduce of ``count`` elements among ``world`` ranks."""

    rank: int
    world: int
    count: int
    steps: tuple[Step, ...] = field(default_factory=tuple)


class StepBuilder:
    """Accumulates the steps of all ranks of a global schedule, then freezes them.

    Algorithms describe transfers globally (``move(src, dst, range, reduce)``) which keeps the two
    sides of every message consistent by construction; :func:`validate` still checks the result.

    With ``only=r`` it keeps just rank ``r``'s side of each move, so a rank of a large job
    builds its own schedule in O(steps x moves) cheap calls without holding everyone's.
    """

    def __init__(self, world: int, count: int, only: int | None = None) -> None:
        self.world = world
        self.count = count
        self.only = only
        self._steps: list[dict[int, tuple[list[Send], list[Recv]]]] = []

    def step(self) -> int:
        """Open a new global step and return its index."""
        self._steps.append({})
        return len(self._steps) - 1

    def _slot(self, step: int, rank: int) -> tuple[list[Send], list[Recv]]:
        return self._steps[step].setdefault(rank, ([], []))

    def move(self, src: int, dst: int, rng: Range, *, reduce: bool, step: int = -1) -> None:
        if rng.size == 0:
            return
        if self.only is None or self.only == src:
            self._slot(step, src)[0].append(Send(dst, rng))
        if self.only is None or self.only == dst:
            self._slot(step, dst)[1].append(Recv(src, rng, reduce))

    @property
    def num_steps(self) -> int:
        return len(self._steps)

    def build(self, rank: int) -> Schedule:
        if self.only is not None and rank != self.only:
            raise ValueError(f"builder kept only rank {self.only}")
        steps = []
        for per_rank in self._steps:
            sends, recvs = per_rank.get(rank, ((), ()))
            steps.append(Step(tuple(sends), tuple(recvs)))
        # Step indices are the contract between ranks, so every rank keeps every step.
        return Schedule(rank, self.world, self.count, tuple(steps))

    def build_all(self) -> list[Schedule]:
        return [self.build(r) for r in range(self.world)]


def validate(schedules: Sequence[Schedule]) -> None:
    """Raise :class:`ScheduleError` naming the first broken rule, else return None."""
    if not schedules:
        raise ScheduleError("no schedules")
    world, count = schedules[0].world, schedules[0].count
    if len(schedules) != world:
        raise ScheduleError(f"{len(schedules)} schedules for world size {world}")
    nsteps = len(schedules[0].steps)
    for r, sch in enumerate(schedules):
        if sch.rank != r or sch.world != world or sch.count != count:
            raise ScheduleError(f"rank {r}: schedule header {sch.rank}/{sch.world}/{sch.count}")
        if len(sch.steps) != nsteps:
            raise ScheduleError(f"rank {r}: {len(sch.steps)} steps, rank 0 has {nsteps}")
    for i in range(nsteps):
        steps = [sch.steps[i].nonempty() for sch in schedules]
        for r, st in enumerate(steps):
            _check_local(r, i, st, world, count)
        _check_matching(i, steps)


def _check_local(rank: int, i: int, st: Step, world: int, count: int) -> None:
    for op in (*st.sends, *st.recvs):
        if not 0 <= op.peer < world or op.peer == rank:
            raise ScheduleError(f"step {i} rank {rank}: bad peer {op.peer}")
        if op.range.stop > count:
            raise ScheduleError(f"step {i} rank {rank}: range {op.range} beyond count {count}")
    writes = sorted((r.range.start, r.range.stop) for r in st.recvs)
    for (_, a_stop), (b_start, _) in itertools.pairwise(writes):
        if b_start < a_stop:
            raise ScheduleError(f"step {i} rank {rank}: an element is written twice")
    for s in st.sends:
        for r in st.recvs:
            if s.range.overlaps(r.range):
                raise ScheduleError(
                    f"step {i} rank {rank}: sends {s.range} while receiving into {r.range}"
                )


def _check_matching(i: int, steps: Sequence[Step]) -> None:
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
