"""Robust summary statistics of raw timing samples."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    min: float
    median: float
    mean: float
    p5: float
    p95: float
    max: float
    stdev: float

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        """The statistics (not ``n``) as ``{prefix + name: value}``."""
        return {prefix + k: v for k, v in asdict(self).items() if k != "n"}


def summarize(samples: np.ndarray) -> Summary:
    if samples.size == 0:
        raise ValueError("no samples")
    p5, med, p95 = np.percentile(samples, [5, 50, 95])
    return Summary(
        n=int(samples.size),
        min=float(samples.min()),
        median=float(med),
        mean=float(samples.mean()),
        p5=float(p5),
        p95=float(p95),
        max=float(samples.max()),
        stdev=float(samples.std(ddof=1)) if samples.size > 1 else 0.0,
    )
