"""The model's error band, as the validation benchmark measured it (bench/advise/band.yaml,
written by ``python -m benchmarks.advise_ranking --write-band`` from the check sweeps of
benchmarks/ranking_sweeps.yaml, never by hand): ``step``, how far one predicted step may be
off; ``rank``, how far two layouts of one cluster may be off against each other (what ties
layouts). docs/advise.md (Uncertainty).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

BAND = Path(__file__).with_name("band.yaml")


@dataclass(frozen=True)
class Band:
    step: float  # relative: a predicted step is within step x (1 +- this)
    rank: float  # relative: layouts within this of the best are tied with it
    statistic: str  # what the figures are, over which rows

    def __post_init__(self) -> None:
        for k in ("step", "rank"):
            if not 0 <= getattr(self, k) < 1:
                raise ValueError(f"band.{k} must be in [0, 1), got {getattr(self, k)}")

    @property
    def describe(self) -> str:
        return (f"error band: a step ±{self.step:.0%}, layouts against each other ±{self.rank:.0%} "
                f"({self.statistic})")


@functools.cache
def band() -> Band:
    """The band of bench/advise/band.yaml."""
    raw = yaml.safe_load(BAND.read_text())
    return Band(float(raw["step"]), float(raw["rank"]), str(raw["statistic"]))
