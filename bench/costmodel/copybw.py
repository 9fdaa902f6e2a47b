"""This host's local-copy bandwidth, as the runs' drift canary measured it
(``bench/measure/canary.py``: per rank, a 16 MiB copy past the caches and a 256 KiB one they
hold): the median of every reading at each size, which ``commbench calibrate`` writes into the
profile's ``device`` keys. How copies are priced: docs/predict.md (Calibration, local copies).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.measure import canary

SIZES = {key: 4 * n for key, (n, _) in canary.COPIES.items()}  # bytes copied (float32s) per reading


@dataclass(frozen=True)
class CopyBandwidth:
    bytes_per_s: float  # past the caches (16 MiB)
    readings: int
    curve: tuple[tuple[int, float], ...] = ()  # (bytes, B/s) by size, when several were read

    def device(self) -> dict[str, Any]:
        """The profile's device keys it sets (the curve only when read at two sizes or more)."""
        out: dict[str, Any] = {"memory_bandwidth_bytes_per_s": self.bytes_per_s}
        if self.curve:
            out["copy_bandwidth_curve"] = [[n, bw] for n, bw in self.curve]
        return out

    def describe(self) -> str:
        at = ", ".join(f"{n >> 10} KiB {bw / 1e9:.3g} GB/s" for n, bw in self.curve)
        return (f"median of {self.readings} drift-canary memcpy readings (np.copyto, read + "
                f"write, slowest rank): {at or f'{self.bytes_per_s / 1e9:.3g} GB/s'}")


def measured(runs: Sequence[Path]) -> CopyBandwidth | None:
    """The median memcpy bandwidth at each size over every canary reading of ``runs``; None
    without a 16 MiB reading."""
    rates: dict[int, list[float]] = {n: [] for n in SIZES.values()}
    for run in runs:
        for reading in canary.read(Path(run)):
            for key, n in SIZES.items():
                rates[n] += [float(v) for v in (reading.get(key) or [])
                             if isinstance(v, (int, float)) and v > 0]
    big = rates[SIZES["memcpy_GBps"]]
    if not big:
        return None
    curve = tuple((n, statistics.median(v) * 1e9) for n, v in sorted(rates.items()) if v)
    return CopyBandwidth(statistics.median(big) * 1e9, len(big), curve if len(curve) > 1 else ())
