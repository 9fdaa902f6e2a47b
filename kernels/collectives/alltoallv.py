"""alltoallv: rank s sends C[s][d] elements to each rank d; d receives, in source order, the
concatenation of what every rank sends it (MPI_Alltoallv with packed displacements).

The count matrix C is the collective's argument, ``alltoallv(zipf,s=1.2,seed=3)``
(:mod:`kernels.counts`; plain ``alltoallv`` is ``uniform``). Size, busbw (nccl-tests'
``AlltoAllvGetBw``, https://github.com/NVIDIA/nccl-tests/blob/master/src/alltoallv.cu) and the
workspace with its staging area: docs/collectives.md, "alltoallv and its count matrices".
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kernels import counts
from kernels.collective import (
    COLLECTIVES,
    Collective,
    Layout,
    Result,
    VendorArgs,
    nccl_p2p,
    register,
)
from kernels.schedule import Range

if TYPE_CHECKING:
    from kernels.problem import Problem

NAME = "alltoallv"
DEFAULT = "uniform"  # the matrix of plain ``alltoallv``


@dataclass(frozen=True)
class Plan:
    """Where every block lies, for one (matrix, n, p): ``c[s][d]`` elements from s's input at
    ``in_off[s][d]`` to d's output at ``out_off[s][d]`` (relative to the output's start)."""

    c: np.ndarray
    in_off: np.ndarray
    out_off: np.ndarray

    @property
    def s_in(self) -> int:
        return int(self.c.sum(axis=1).max())

    @property
    def s_out(self) -> int:
        return int(self.c.sum(axis=0).max())

    @property
    def off_diagonal(self) -> int:
        return int(self.c.sum() - np.trace(self.c))

    @property
    def stage(self) -> int:
        """Start of the staging area (2 * off_diagonal elements) in the schedules' workspace."""
        return self.s_in + self.s_out

    def send(self, s: int, d: int) -> Range:
        """s's input block for d."""
        a = int(self.in_off[s, d])
        return Range(a, a + int(self.c[s, d]))

    def recv(self, s: int, d: int) -> Range:
        """Where s's block lands in d's workspace."""
        a = self.s_in + int(self.out_off[s, d])
        return Range(a, a + int(self.c[s, d]))


def _exclusive(c: np.ndarray, axis: int) -> np.ndarray:
    return np.cumsum(c, axis=axis) - c


@functools.lru_cache(maxsize=64)
def plan_for(text: str, n: int, p: int) -> Plan:
    """The :class:`Plan` of count matrix ``text`` for size n at p ranks."""
    c = counts.matrix(text, n, p)
    return Plan(c, _exclusive(c, 1), _exclusive(c, 0))


def plan(problem: Problem) -> Plan:
    """The :class:`Plan` of an alltoallv problem (its collective's bound matrix)."""
    return plan_for(problem.spec.args or DEFAULT, problem.count, problem.world)


def equal_blocks(problem: Problem) -> str | None:
    """Why the matrix is not alltoall's (n/p elements between every pair), or None: a closed
    form of alltoall then prices the same schedule."""
    if (problem.spec.args or DEFAULT) != DEFAULT:
        return f"count matrix {problem.spec.args} is not uniform"
    if problem.count % problem.world:
        return f"count {problem.count} not a multiple of p = {problem.world} (uneven blocks)"
    return None


def sent_elements(c: np.ndarray, rank: int) -> int:
    """Elements ``rank`` puts on the wire in any one-hop exchange: its row less its own block
    (the closed form the byte counter is tested against)."""
    return int(c[rank].sum() - c[rank, rank])


def _layout(text: str, n: int, p: int, rank: int, separate: bool) -> Layout:
    v = plan_for(text, n, p)
    c = v.c
    space = v.s_in + v.s_out + (0 if separate else 2 * v.off_diagonal)
    return Layout(space, Range(0, int(c[rank].sum())),
                  Range(v.s_in, v.s_in + int(c[:, rank].sum())), n)


def _result(text: str, n: int, p: int, rank: int, root: int, start: int, stop: int) -> Result:
    v = plan_for(text, n, p)
    k = np.arange(start, stop, dtype=np.int64)
    src = np.searchsorted(np.cumsum(v.c[:, rank]), k, side="right")
    return Result(v.in_off[src, rank] + k - v.out_off[src, rank], src)


def _peers(text: str, a: VendorArgs) -> tuple[list[int], list[int], list[int], list[int]]:
    """(send counts, send displacements, receive counts, receive displacements) of this rank."""
    v = plan_for(text, a.count, a.world)
    r = a.rank
    return ([int(x) for x in v.c[r]], [int(x) for x in v.in_off[r]],
            [int(x) for x in v.c[:, r]], [int(x) for x in v.out_off[:, r]])


def _mpi(text: str, a: VendorArgs) -> Callable[[], None]:
    sc, sd, rc, rd = _peers(text, a)

    def spec(view: object, cnt: list[int], disp: list[int]) -> list[object]:
        if isinstance(view, list):  # [buffer, datatype] (the host transport's, made once)
            return [view[0], (cnt, disp), view[1]]
        return [view, (cnt, disp)]

    return functools.partial(a.handle.Alltoallv, spec(a.send, sc, sd), spec(a.recv, rc, rd))


def _torch(text: str, a: VendorArgs) -> Callable[[], None]:
    import torch.distributed as dist

    sc, _, rc, _ = _peers(text, a)
    return functools.partial(dist.all_to_all_single, a.recv, a.send, output_split_sizes=rc,
                             input_split_sizes=sc, group=a.handle)


def _nccl(text: str, a: VendorArgs) -> Callable[[], None]:
    """NCCL has no alltoallv: grouped send/recv per peer, zero counts skipped."""
    item = a.send.itemsize
    sc, sd, rc, rd = _peers(text, a)
    s, r = a.send.data.ptr, a.recv.data.ptr
    return nccl_p2p(a.handle, [(q, s + sd[q] * item, sc[q] * item) for q in range(a.world) if sc[q]],
                    [(q, r + rd[q] * item, rc[q] * item) for q in range(a.world) if rc[q]])


def _bound(text: str) -> dict[str, object]:
    """The fields that depend on the count matrix."""
    return {
        "layout_of": functools.partial(_layout, text),
        "result": functools.partial(_result, text),
        "vendor": {f: functools.partial(call, text)
                   for f, call in (("mpi", _mpi), ("torch", _torch), ("nccl", _nccl))},
        "args": "" if text == DEFAULT else text,
    }


def _bind(args: str) -> Collective:
    return _bound_to(counts.CountSpec.parse(args).text)


@functools.cache
def _bound_to(text: str) -> Collective:
    """One instance per matrix, however its arguments were spelled."""
    if text == DEFAULT:
        return COLLECTIVES.get(NAME)
    return dataclasses.replace(COLLECTIVES.get(NAME), **_bound(text))  # type: ignore[arg-type]


register(Collective(
    name=NAME, order=7, summary="rank s sends C[s][d] elements to rank d (a count matrix)",
    aliases=("all_to_allv",), reduces=False,
    busbw=lambda p: (p - 1) / p, busbw_formula="(p-1)/p",
    size_is="the busiest rank's max(elements sent, received); the count matrix is scaled to it",
    inplace_at=lambda n, p, rank: (0, n),  # not None: the schedules' workspace has the staging
    result=functools.partial(_result, DEFAULT), bind=_bind,
    vendor_names={"mpi": "Alltoallv"},
    **{k: v for k, v in _bound(DEFAULT).items() if k not in ("result",)},  # type: ignore[arg-type]
))
