"""What an algorithm is: a named function, of one collective, that fills a :class:`StepBuilder`.

Algorithms never time themselves, never allocate buffers and never touch a transport. Every
collective also has the vendor pseudo-algorithm ``native`` (``build=None``: the transport calls
the collective's vendor function on separate send and receive buffers, as nccl-tests and OSU
do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernels import collective as coll
from kernels.collective import Collective
from kernels.problem import Problem
from kernels.registry import Registry, UnknownName
from kernels.schedule import Schedule, StepBuilder

if TYPE_CHECKING:
    from kernels.closed import ClosedForm
    from kernels.compiled import Shape

VENDOR = "native"
VENDOR_INPLACE = "native_inplace"


BuildFn = Callable[[Problem, StepBuilder], None]
SentFn = Callable[[Problem, int], int]  # (problem, rank) -> elements that rank sends


@dataclass(frozen=True, slots=True)
class Algorithm:
    name: str
    collective: str
    build: BuildFn | None  # None: the transport's vendor collective
    summary: str
    doc: str = ""
    sent: SentFn | None = None  # the docstring's closed form for elements sent per rank (tested)
    in_place: bool = True  # vendor calls: on the in-place layout (native_inplace) or not (native)
    shape: Shape | None = None  # its symbolic build for the cost model (kernels.compiled)
    closed: ClosedForm | None = None  # its cost without schedules, at scale (kernels.closed)

    @property
    def is_vendor(self) -> bool:
        return self.build is None

    def schedule(self, problem: Problem, rank: int) -> Schedule:
        """Rank ``rank``'s schedule (a pure function of problem and rank)."""
        return self._builder(problem, only=rank).build(rank)

    def schedules(self, problem: Problem) -> list[Schedule]:
        """Every rank's schedule, for verification and byte counting."""
        b = self._builder(problem, only=None)
        return b.build_all()

    def _builder(self, problem: Problem, only: int | None) -> StepBuilder:
        if self.build is None:
            raise TypeError(f"{self.name} is the vendor collective; it has no schedule")
        if problem.spec.name != self.collective:
            raise ValueError(f"{self.collective} algorithm {self.name} given a "
                             f"{problem.spec.name} problem")
        b = StepBuilder(problem.world, problem.space, only=only)
        self.build(problem, b)
        return b


ALGORITHMS: Registry[Algorithm] = Registry("algorithm")  # keyed "collective/name"


def all_but_own(problem: Problem, rank: int) -> int:
    """``sent`` of the algorithms that send every other rank's block once: (p-1) n/p."""
    return (problem.world - 1) * problem.block


def algorithm(name: str, collective: str = "all_reduce", sent: SentFn | None = None,
              shape: Shape | None = None,
              closed: ClosedForm | None = None) -> Callable[[BuildFn], BuildFn]:
    """Register ``fn`` as algorithm ``name`` of ``collective``; its docstring's first line is the
    summary, the rest states steps and bytes sent per rank. ``sent`` is that closed form as code
    (elements rank r sends); the tests hold it equal to the counted schedule. ``shape`` and
    ``closed``: how the cost model builds it symbolically and prices it at scale (both optional,
    both tested equal to the evaluator on the real schedules)."""

    def deco(fn: BuildFn) -> BuildFn:
        doc = (fn.__doc__ or name).strip()
        ALGORITHMS.add(f"{collective}/{name}", Algorithm(name, collective, fn, doc.splitlines()[0],
                                                         doc, sent, shape=shape, closed=closed))
        return fn

    return deco


def vendor_of(c: Collective) -> list[Algorithm]:
    """``native`` (and ``native_inplace`` where the collective declares an in-place call)."""
    calls = ", ".join(sorted(c.vendor))
    where = "separate send/receive buffers" if c.vendor_separate else "in place"
    out = [Algorithm(VENDOR, c.name, None, f"the transport's vendor {c.name} ({where}; {calls})",
                     in_place=not c.vendor_separate)]
    if c.vendor_inplace:
        out.append(Algorithm(VENDOR_INPLACE, c.name, None,
                             f"the vendor {c.name} in place ({', '.join(sorted(c.vendor_inplace))})"))
    return out


def algorithms_of(collective: str) -> list[Algorithm]:
    """The vendor calls first, then the collective's algorithms by name (not in registration
    order, which depends on what imported an algorithm's module first)."""
    c = coll.resolve(collective)
    own = [ALGORITHMS.get(k) for k in sorted(ALGORITHMS.names()) if k.startswith(c.name + "/")]
    return [*vendor_of(c), *own]


def algorithm_names(collective: str) -> list[str]:
    return [a.name for a in algorithms_of(collective)]


def get_algorithm(collective: str, name: str) -> Algorithm:
    for a in algorithms_of(collective):
        if a.name == name:
            return a
    valid = ", ".join(algorithm_names(collective))
    raise UnknownName(f"unknown {coll.resolve(collective).name} algorithm {name!r}; valid: {valid}")
