"""Which sends of a schedule wait, and how long (pure, no MPI): a send is delayed, not its step, by
the flows of the step exactly as the cost model counts them; sends to one peer keep their order,
because MPI matches a pair's messages in posting order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.emulate.links import EmulatedLinks
from kernels.schedule import Schedule

StepSends = list[tuple[int, int]]  # (peer, bytes) of each send of one step, in schedule order


def sends_of(schedule: Schedule, itemsize: int) -> list[StepSends]:
    """Per step of ``schedule`` (idle steps included), its sends as (peer, bytes)."""
    return [[(s.peer, s.range.size * itemsize) for s in st.sends] for st in schedule.steps]


def rank_delays(links: EmulatedLinks, everyone: Sequence[Sequence[StepSends]],
                rank: int) -> list[list[float]]:
    """Per step, the delay of each of ``rank``'s sends, from all ranks' sends of that step
    (``everyone[r]`` is rank r's :func:`sends_of`)."""
    if len(everyone) != links.world:
        raise ValueError(f"sends of {len(everyone)} ranks for an emulated job of {links.world}")
    nsteps = len(everyone[rank])
    if any(len(e) != nsteps for e in everyone):
        raise ValueError("ranks' schedules have different numbers of steps")
    out = []
    for i in range(nsteps):
        src = [r for r, e in enumerate(everyone) for _ in e[i]]
        dst = [peer for e in everyone for peer, _ in e[i]]
        nbytes = [b for e in everyone for _, b in e[i]]
        delays = links.step_delays(src, dst, nbytes) if src else []
        mine = [k for k, r in enumerate(src) if r == rank]
        out.append([float(delays[k]) for k in mine])
    return out


@dataclass(frozen=True)
class Release:
    """Sends of one step (indices among its sends) that start ``offset_s`` after it began."""

    offset_s: float
    sends: tuple[int, ...]


def releases(peers: Sequence[int], delays: Sequence[float]) -> list[Release]:
    """When each send of one step starts: at its delay, but never before an earlier send to the
    same peer; sends due together start together in schedule order; offsets increase. A first
    release at offset 0 holds the sends that wait for nothing."""
    if len(peers) != len(delays):
        raise ValueError("one delay per send")
    start: list[float] = []
    last: dict[int, float] = {}
    for peer, d in zip(peers, delays):
        t = max(float(d), last.get(peer, 0.0))
        last[peer] = t
        start.append(t)
    out: list[Release] = []
    for t in sorted(set(start)):
        out.append(Release(t, tuple(k for k, s in enumerate(start) if s == t)))
    return out
