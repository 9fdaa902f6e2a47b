"""A replay's calls at another world size, its groups rescaled by the job's layout: a group that
spans the outermost (data-parallel) dimension grows with the job at the same stride, any other
is repeated every traced-world ranks; docs/replay.md, "commbench predict --replay"."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.argtypes import CommbenchError
from bench.replay.scenario import Case, ReplayScenario
from kernels.collective import resolve
from kernels.ops import ITEMSIZE


class ScaleError(CommbenchError, ValueError):
    """A world size a replay cannot be rescaled to; one line."""


@dataclass(frozen=True)
class Scaled:
    case: Case  # the call at the new scale
    calls: int  # per step
    ops: tuple[str, ...]  # the trace's operations it stands for


def _spans(group: tuple[int, ...], world: int) -> int | None:
    """The stride of ``group`` when it spans the outermost dimension, else None."""
    g = sorted(group)
    d = g[1] - g[0] if len(g) > 1 else world
    ok = all(b - a == d for a, b in itertools.pairwise(g)) and g[0] < d and len(g) * d == world
    return d if ok else None


def rescale(sc: ReplayScenario, world: int) -> list[Scaled]:
    """Every distinct call of the step on ``world`` ranks, with its calls per step."""
    w0 = sc.world_size
    if world < w0 or world % w0:
        raise ScaleError(f"world size {world}: a replay of a {w0}-rank job scales to whole "
                         f"multiples of {w0}")
    f = world // w0
    calls: dict[Case, int] = {}
    ops: dict[Case, set[str]] = {}
    for c in sc.calls:
        base = c.case()
        d = _spans(base.group, w0)
        groups = ([tuple(base.group[0] + i * d for i in range(len(base.group) * f))]
                  if d is not None and f > 1 else
                  [tuple(r + k * w0 for r in base.group) for k in range(f)])
        for g in groups:
            spec, p = resolve(base.collective), len(g)
            count = spec.round_count(base.count, p) if len(g) != len(base.group) else base.count
            if count < 1:
                raise ScaleError(f"{c.op} of {c.nbytes} B: no whole block per rank of {p}")
            case = Case(base.collective, g, count, base.dtype, count * ITEMSIZE[base.dtype],
                        base.root)
            calls[case] = calls.get(case, 0) + 1
            ops.setdefault(case, set()).add(c.op)
    return [Scaled(k, n, tuple(sorted(ops[k]))) for k, n in calls.items()]
