"""A replay's calls at another world size, its groups rescaled by the job's layout.

The ranks are read as a grid whose outermost dimension is data parallel: a group that spans it
(ranks ``g0, g0+d, ..., g0+(k-1)d`` with ``k*d`` the traced world: the world itself, or the
data-parallel groups across tensor or pipeline groups) grows with the job, ``f`` times as many
ranks at the same stride; any other group (tensor, pipeline pairs) keeps its size and is
repeated ``f`` times, ``W`` ranks apart. Each call keeps its size S (a ZeRO all_gather gathers
the same parameters over more ranks), rounded down to whole blocks of the new group where the
collective divides. A job whose traced world is one tensor-parallel group grows that group:
trace a layout with the dimension that grows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.replay.scenario import Case, ReplayScenario
from kernels.collective import resolve
from kernels.ops import ITEMSIZE


class ScaleError(ValueError):
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
