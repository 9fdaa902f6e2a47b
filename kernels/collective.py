"""What a collective is: a small declarative record, one file each in ``kernels/collectives/``
(what a declaration states: docs/collectives.md, "What a collective is").

Everything is a function of the element count ``n``, the world size ``p``, the rank and the root:
the layouts (:class:`Layout`), the result every output element must hold (:class:`Result`, read
by the verifier, the numeric check and the byte counter), the busbw factor, the vendor call per
transport family and the library's own name of that call (``vendor_names``: ``Allreduce``,
NCCL's ``AllReduce``), by which vendor settings and log lines are matched to the collective.
Nothing outside ``kernels/collectives/`` names a collective: code asks this registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels.registry import Registry, UnknownName
from kernels.schedule import Range


@dataclass(frozen=True, slots=True)
class Layout:
    """One rank's workspace for one call: ``space`` elements; input element ``i`` at
    ``inp.start + i``, output element ``k`` at ``out.start + k`` (None: no input / no output on
    this rank, e.g. broadcast's non-roots have no input, reduce's have no output)."""

    space: int
    inp: Range | None
    out: Range | None
    count: int = 0  # the collective's n this layout is for (a vendor call of uneven counts needs it)


@dataclass(frozen=True, slots=True)
class Result:
    """What output elements ``[start, stop)`` of one rank must hold: for each, the input index it
    comes from, and either the one rank it is copied from (``source``) or, when ``source`` is
    None, the reduction of that input element over every rank."""

    index: np.ndarray
    source: np.ndarray | None


@dataclass(frozen=True, slots=True)
class VendorArgs:
    """What a vendor call is bound to, once per case: the transport's handle (``mpi``: an
    ``MPI.Comm``; ``torch``: a process group or None; ``nccl``: :class:`NcclHandle`), send and
    receive views of the workspace (None where the layout has no such region on this rank),
    the transport's op handle (None for collectives that do not reduce), root, rank, world."""

    handle: Any
    send: Any
    recv: Any
    op: Any
    root: int
    rank: int
    world: int
    count: int = 0  # the collective's n (Layout.count)


@dataclass(frozen=True, slots=True)
class NcclHandle:
    """What an NCCL vendor call needs beside the buffers: the communicator, the
    ``cupy.cuda.nccl`` module, the stream pointer and the element type's NCCL constant."""

    comm: Any
    nccl: Any
    stream: int
    dtype: Any


def nccl_p2p(h: NcclHandle, sends: Sequence[tuple[int, int, int]],
             recvs: Sequence[tuple[int, int, int]]) -> Callable[[], None]:
    """Raw-byte sends and receives ``(peer, pointer, bytes)`` in one NCCL group on the stream
    (the collectives NCCL lacks)."""

    def run() -> None:
        h.nccl.groupStart()
        for q, ptr, nbytes in sends:
            h.comm.send(ptr, nbytes, h.nccl.NCCL_INT8, q, h.stream)
        for q, ptr, nbytes in recvs:
            h.comm.recv(ptr, nbytes, h.nccl.NCCL_INT8, q, h.stream)
        h.nccl.groupEnd()

    return run


# Binds a vendor call to its buffers once (imports, views, constants resolved here) and returns
# the zero-argument function the timed loop calls.
VendorCall = Callable[[VendorArgs], Callable[[], None]]


@dataclass(frozen=True)
class Collective:
    """A collective's declaration (see the module docstring); one instance per file."""

    name: str
    order: int  # listing order (nccl-tests': all_reduce, all_gather, reduce_scatter, ...)
    summary: str
    reduces: bool  # takes an op; else it runs once per size with op "none"
    size_is: str  # which buffer the reported size is (for the docs and the method section)
    result: Callable[[int, int, int, int, int, int], Result]  # (n, p, rank, root, start, stop)
    aliases: tuple[str, ...] = ()
    rooted: bool = False
    divides: bool = False  # n is rounded down to a multiple of p (blocks of n/p), as nccl-tests
    busbw: Callable[[int], float] = lambda p: 1.0  # factor on algbw, of p
    busbw_formula: str = "1"  # the same factor as text, for tables and reports ("2(p-1)/p")
    in_count: Callable[[int, int], int] = lambda n, p: n  # (n, p) -> input elements per rank
    out_count: Callable[[int, int], int] = lambda n, p: n  # (n, p) -> output elements per rank
    # (n, p, rank) -> (inp, out) starts in a workspace of max(in, out) elements; None: the
    # schedules use separate buffers
    inplace_at: Callable[[int, int, int], tuple[int, int]] | None = lambda n, p, r: (0, 0)
    has_input: Callable[[int, int], bool] = lambda rank, root: True
    has_output: Callable[[int, int], bool] = lambda rank, root: True
    vendor: Mapping[str, VendorCall] = field(default_factory=dict)  # transport family -> call
    vendor_separate: bool = True  # native on separate send/receive buffers (else in place)
    # ``native_inplace``: the vendor call on the in-place layout (nccl-tests' in-place column),
    # for the families whose in-place convention is this layout
    vendor_inplace: Mapping[str, VendorCall] = field(default_factory=dict)
    # transport family -> the library's own name of the vendor call, as its settings and logs spell
    # it (MPICH's MPIR_CVAR_ALLREDUCE_*, Open MPI's coll_tuned_allreduce_*, NCCL's "AllReduce:")
    vendor_names: Mapping[str, str] = field(default_factory=dict)
    # (n, p, rank, separate) -> Layout, for collectives whose ranks' buffers differ in size
    # (alltoallv's rows and columns); None: from in_count/out_count/inplace_at as below
    layout_of: Callable[[int, int, int, bool], Layout] | None = None
    # parameters: ``name(args)`` resolves to ``bind(args)``, this collective bound to them (the
    # count matrix of alltoallv); None: the collective takes none
    bind: Callable[[str], Collective] | None = None
    args: str = ""  # the arguments this instance is bound to ("" unbound)

    @property
    def key(self) -> str:
        """The name with the bound arguments (``alltoallv(zipf,s=1.2)``): what scenarios,
        cases and records carry, and what :func:`resolve` reads back."""
        return f"{self.name}({self.args})" if self.args else self.name

    def round_count(self, n: int, p: int) -> int:
        """Elements actually measured for a requested ``n``: whole blocks of p when divided."""
        return n - n % p if self.divides else n

    def layout(self, n: int, p: int, rank: int, root: int = 0, *, separate: bool = False) -> Layout:
        """Rank ``rank``'s workspace: in place (as the schedules run) or with separate send and
        receive buffers (send first, then receive)."""
        if self.layout_of is not None:
            return self.layout_of(n, p, rank, separate)
        cin, cout = self.in_count(n, p), self.out_count(n, p)
        has_in, has_out = self.has_input(rank, root), self.has_output(rank, root)
        if separate or self.inplace_at is None:
            inp = Range(0, cin) if has_in else None
            out = Range(cin, cin + cout) if has_out else None
            return Layout(cin + cout, inp, out, n)
        a, b = self.inplace_at(n, p, rank)
        return Layout(max(a + cin, b + cout), Range(a, a + cin) if has_in else None,
                      Range(b, b + cout) if has_out else None, n)


# Discovery imports every module under both packages (adding a file is the whole change), then
# under each package named in ``COMMBENCH_PLUGINS`` (your own algorithms, outside this tree).
COLLECTIVES: Registry[Collective] = Registry("collective", ("kernels.collectives",
                                                           "kernels.algorithms"))


def register(c: Collective) -> Collective:
    """Called once at the bottom of each ``kernels/collectives/<name>.py``."""
    return COLLECTIVES.add(c.name, c)


@functools.cache
def resolve(name: str) -> Collective:
    """The collective called ``name`` or one of its aliases (``allreduce`` -> ``all_reduce``);
    ``name(args)``: that collective bound to ``args`` (:attr:`Collective.bind`)."""
    head, paren, rest = name.strip().partition("(")
    key = head.strip().lower().replace("-", "_")
    for c in (COLLECTIVES.get(n) for n in COLLECTIVES.names()):
        if key == c.name or key in c.aliases:
            if not paren:
                return c
            if c.bind is None or not rest.endswith(")"):
                raise UnknownName(f"collective {name!r}: {c.name} takes no arguments"
                                  if c.bind is None else f"collective {name!r}: no closing ')'")
            try:
                return c.bind(rest[:-1].strip())
            except ValueError as e:
                raise UnknownName(f"collective {name!r}: {e}") from None
    raise UnknownName(f"unknown collective {name!r}; valid: {', '.join(COLLECTIVES.names())}")


def canonical(name: Any) -> Any:
    """``name``'s canonical collective name (``allreduce`` -> ``all_reduce``), or ``name`` as it
    is when it names no collective (records of other tools, missing values)."""
    if not isinstance(name, str):
        return name
    try:
        return resolve(name).key
    except UnknownName:
        return name


def names() -> list[str]:
    """Every collective's name, in listing order."""
    return sorted(COLLECTIVES.names(), key=lambda n: COLLECTIVES.get(n).order)
