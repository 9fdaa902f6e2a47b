"""This host's local-copy bandwidth, as the runs' drift canary measured it.

Every ``commbench run`` times a 16 MiB ``np.copyto`` per rank at the start, between world sizes
and at the end (``bench/canary.py``: GB/s of read + write traffic, the slowest rank). Schedules
with local copies (Bruck's rotations, hierarchical gathers) spend that time, and the cost model
prices a copy of n bytes at 2n / ``device.memory_bandwidth_bytes_per_s``; without a figure
copies would be free. ``commbench calibrate`` takes the median of every reading of its runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import canary


@dataclass(frozen=True)
class CopyBandwidth:
    bytes_per_s: float
    readings: int

    def describe(self) -> str:
        return (f"median of {self.readings} drift-canary memcpy readings (16 MiB np.copyto, read + "
                f"write, slowest rank): {self.bytes_per_s / 1e9:.3g} GB/s")


def measured(runs: Sequence[Path]) -> CopyBandwidth | None:
    """The median memcpy bandwidth over every canary reading of ``runs``; None without any."""
    rates = [float(v) for run in runs for reading in canary.read(Path(run))
             for v in (reading.get("memcpy_GBps") or []) if isinstance(v, (int, float)) and v > 0]
    if not rates:
        return None
    return CopyBandwidth(statistics.median(rates) * 1e9, len(rates))
