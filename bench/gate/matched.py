"""Rounds whose two runs saw the same machine: the drift canary of each run, compared.

A paired round cancels what the machine does to both of its runs only when it does the same to
both. The development VM (and shared runners like it) switch for stretches into a mode where
64 KiB – 4 MiB transfers take 3x as long; when one run of a round falls in that mode and the
other does not, that round's HEAD/BASE ratio is the mode (0.2x or 6x), not the code, and one such
round in five hides any regression (the signed-rank test needs every round to agree). Every run
measures its drift canary (``bench/collective/canary.py``: a 1 MiB all_reduce at the start, between world
sizes and at the end); a round is *matched* when its two runs' canaries did not change speed
by the canary's one rule (:func:`bench.collective.canary.changed_speed`, on each run's median),
and only matched rounds are decided. ``commbench ab`` runs extra rounds for the
mismatched ones (up to as many again), and says which it set aside and why.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.collective import canary
from bench.store.records import StoreError, read_meta

PROBE = "allreduce_1MiB_us"


def speed(run_dir: Path) -> float | None:
    """The run's canary: the median over its readings at its largest world size of each
    reading's median 1 MiB all_reduce time (us); None without readings."""
    readings = [r for r in canary.read(run_dir) if r.get(PROBE)]
    if not readings:
        return None
    top = max(int(r.get("world_size") or 0) for r in readings)
    return statistics.median(statistics.median(r[PROBE]) for r in readings
                             if int(r.get("world_size") or 0) == top)


def round_speeds(side_dir: Path) -> dict[int, float]:
    """Each round's canary of an ``ab`` side directory (its ``meta.json`` names each round's run);
    rounds without one are left out."""
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


def mismatched(base: Mapping[int, float], head: Mapping[int, float]) -> list[Mismatch]:
    """Rounds both sides have a canary for in which the machine changed speed between them."""
    return [Mismatch(r, base[r], head[r]) for r in sorted(set(base) & set(head))
            if canary.changed_speed([base[r]], [head[r]])]
