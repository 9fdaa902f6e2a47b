"""Rounds whose two runs saw the same machine: each run's drift canary, compared by the canary's
one rule (:func:`bench.measure.canary.changed_speed`). Sides on stacks of their own measure
their canaries through their own MPI, so there HEAD's is first divided by the sides' usual ratio
(the median over the rounds). docs/gate.md, "Matched rounds"."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.measure import canary
from bench.store.records import StoreError, read_meta

PROBE = "allreduce_1MiB_us"


def speed(run_dir: Path) -> float | None:
    """The run's canary at its largest world size: median 1 MiB all_reduce time (us), or None."""
    readings = [r for r in canary.read(run_dir) if r.get(PROBE)]
    if not readings:
        return None
    top = max(int(r.get("world_size") or 0) for r in readings)
    return statistics.median(statistics.median(r[PROBE]) for r in readings
                             if int(r.get("world_size") or 0) == top)


def round_speeds(side_dir: Path) -> dict[int, float]:
    """Each round's canary of an ``ab`` side directory (rounds without one left out)."""
    try:
        meta = read_meta(side_dir)
    except StoreError:
        return {}
    out: dict[int, float] = {}
    for r in (meta.get("ab") or {}).get("rounds") or []:
        s = speed(Path(r["run"])) if r.get("run") else None
        if s is not None:
            out[int(r["round"])] = s
    return out


@dataclass(frozen=True)
class Mismatch:
    round: int
    base_us: float
    head_us: float

    def describe(self) -> str:
        return (f"round {self.round}: canary 1 MiB all_reduce {self.base_us:.0f} us (BASE) vs "
                f"{self.head_us:.0f} us (HEAD)")


def mismatched(base: Mapping[int, float], head: Mapping[int, float],
               own_stacks: bool = False) -> list[Mismatch]:
    """Rounds in which the machine changed speed between the two runs (module doc)."""
    common = sorted(set(base) & set(head))
    usual = statistics.median(head[r] / base[r] for r in common) if own_stacks and common else 1.0
    return [Mismatch(r, base[r], head[r]) for r in common
            if canary.changed_speed([base[r]], [head[r] / usual])]


STACK_FIELDS = ("env", "python", "prefix")  # of a side's ``ab`` meta: what makes its stack its own


def own_stacks(base_dir: Path, head_dir: Path) -> bool:
    """The two ``ab`` side directories ran on stacks of their own (other variables, interpreter
    or prefix)."""
    try:
        a, b = ((read_meta(d).get("ab") or {}) for d in (base_dir, head_dir))
    except StoreError:
        return False
    return any(a.get(f) != b.get(f) for f in STACK_FIELDS)
