"""What a strategy issues per training step: calls of one collective, by type, size (nccl-tests'
size S) and group, and their totals as training records count them (:mod:`bench.training.comm`):
a call with a commbench ``algorithm`` as the sends and receives of its schedule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from kernels.topology import Topology

# server: ps workers <-> servers; expert: an expert-parallel group; expert_data: the ranks
# holding the same experts (bench.training.strategies.expert); context: a context-parallel group
GROUPS = ("data", "tensor", "pipeline", "server", "expert", "expert_data", "context")
PHASES = ("forward", "backward", "step")


@dataclass(frozen=True)
class Call:
    op: str  # all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send, recv
    nbytes: int  # size S of one call
    calls: int  # how many such calls per step
    group: str  # one of GROUPS
    phase: str  # forward, backward or step (after backward: the optimizer's)
    overlap: bool  # may run under compute of its phase (the rule: bench.advise.step)
    algorithm: str | None = None  # a commbench all_reduce schedule (DDP hook); None: vendor
    itemsize: int = 4  # element size (schedules count elements)
    rerun: bool = True  # a forward call full recomputation issues again (where its group's are)

    def __post_init__(self) -> None:
        if self.group not in GROUPS or self.phase not in PHASES:
            raise ValueError(f"call {self.op}: group {self.group!r} / phase {self.phase!r}")


def merged(calls: Iterable[Call]) -> list[Call]:
    """``calls`` with the alike ones (equal but for ``calls``) made one, in first-seen order."""
    n: dict[tuple[object, ...], list[Call | int]] = {}
    for c in calls:  # keyed by every field but ``calls`` (hot in advise's search: no replace)
        key = (c.op, c.nbytes, c.group, c.phase, c.overlap, c.algorithm, c.itemsize)
        got = n.get(key)
        if got is None:
            n[key] = [c, c.calls]
        else:
            got[1] += c.calls  # type: ignore[operator]
    return [c if k == c.calls else dataclasses.replace(c, calls=k)  # type: ignore[union-attr]
            for c, k in n.values()]


def tally(op: str, sizes: Iterable[int], group: str, phase: str, overlap: bool,
          algorithm: str | None = None, itemsize: int = 4, per: int = 1) -> list[Call]:
    """One call per distinct size of ``sizes``, ``calls`` ``per`` times how often it occurs:
    :func:`merged` of one call per size, without building them (hot in advise's search)."""
    n: dict[int, int] = {}
    for size in sizes:
        n[size] = n.get(size, 0) + per
    return [Call(op, size, k, group, phase, overlap, algorithm, itemsize) for size, k in n.items()]


@dataclass
class Counted:
    """Bytes and calls by type, as a training record's ``comm_by_type`` / ``comm_calls_by_type``:
    what training counts (:mod:`bench.training.comm`) and what :func:`counted` derives."""

    bytes: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def add(self, op: str, nbytes: int, calls: int = 1) -> None:
        if calls:
            self.bytes[op] = self.bytes.get(op, 0) + nbytes * calls
            self.calls[op] = self.calls.get(op, 0) + calls

    @property
    def total(self) -> int:
        """Bytes this rank puts into collectives and sends (receives excluded)."""
        return sum(b for k, b in self.bytes.items() if k != "recv")


def counted(calls: Iterable[Call], rank_in: dict[str, int], topo: dict[str, Topology]) -> Counted:
    """What training counts on the rank whose index in each group is ``rank_in[group]``;
    ``topo[group]`` places the group's ranks on nodes (for schedules that care)."""
    from kernels.algorithm import Problem, get_algorithm

    out = Counted()
    for c in calls:
        if c.algorithm is None:
            out.add(c.op, c.nbytes, c.calls)
            continue
        sched = get_algorithm(c.op, c.algorithm).schedule(
            Problem(topo[c.group], c.nbytes // c.itemsize, c.itemsize), rank_in[c.group])
        for st in sched.steps:
            for s in st.sends:
                out.add("send", s.range.size * c.itemsize, c.calls)
            for r in st.recvs:
                out.add("recv", r.range.size * c.itemsize, c.calls)
    return out
