"""What a probe measures and how (sizes, repeats, window), and what one pair's measurement
holds: the probe's definitions without MPI, so that the launcher, the scenario and the
records import them without starting MPI (``from mpi4py import MPI`` initialises it, and a
singleton MPI listens on the host's network). The measurement is :mod:`bench.probe.measure`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

TIMER = ("time.perf_counter_ns on the lower rank of each pair; latency: half a ping-pong round "
         "trip; uni: a window of messages one way plus a 4-byte ack (osu_bw); bi: a window each "
         "way at once (osu_bibw), from a ready/go handshake before each window: the clock "
         "starts before either window is posted")


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...]
    repeats: int = 10  # timed samples per measurement, pair and size
    window: int = 16  # messages per bandwidth sample (osu_bw uses 64)
    warmup: int = 1  # untimed turns before the samples

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError("sizes: at least one size of at least 1 byte")
        if self.repeats < 3 or self.window < 1 or self.warmup < 0:
            raise ValueError("repeats >= 3, window >= 1 and warmup >= 0")


@dataclass(frozen=True)
class Samples:
    """What the lower rank of a pair measured at one size (µs per sample)."""

    nbytes: int
    latency_us: tuple[float, ...]  # half round trips
    uni_us: tuple[float, ...]  # window times, one way
    bi_us: tuple[float, ...]  # window times, both ways


Wait = Callable[[float], object]
Clock = Callable[[], int]  # nanoseconds
