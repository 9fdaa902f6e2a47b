"""The harness's clock and timing loop: the one place a measured path reads time (collective cases,
the probe's point-to-point cases, the drift canary and training steps). One iteration:
``before`` (a barrier), clock, ``run``, ``after`` (a device sync), clock; asked for ``waits``, the
clock is also read before the barrier (:mod:`bench.measure.attribution`). Starts no MPI."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Clock = Callable[[], int]  # nanoseconds
CLOCK: Clock = time.perf_counter_ns  # the clock every measurement reads (tests may hand in another)
Run = Callable[[], object]


@dataclass(frozen=True)
class Timer:
    before: Run | None = None  # each iteration's barrier
    after: Run | None = None  # inside the clock: the end of the iteration (a device sync)
    clock: Clock = CLOCK

    def time(self, run: Run, iters: int, out: list[float] | None = None, events: Any = None,
             device_out: list[float] | None = None, waits: list[float] | None = None,
             ) -> list[float]:
        """``iters`` timed iterations of ``run`` appended to ``out`` (µs); with ``events`` (a
        device clock: start, stop, elapsed_us) the device's time of each goes to ``device_out``;
        with ``waits``, each iteration's wait in ``before`` (µs)."""
        out = [] if out is None else out
        clock, before, after = self.clock, self.before, self.after
        for _ in range(iters):
            if waits is not None:
                tb = clock()
            if before is not None:
                before()
            t0 = clock()
            if events is not None:
                events.start()
            run()
            if events is not None:
                events.stop()
            if after is not None:
                after()
            out.append((clock() - t0) / 1e3)
            if waits is not None:  # after the clock: outside the timed region
                waits.append((t0 - tb) / 1e3)
            if events is not None and device_out is not None:
                device_out.append(events.elapsed_us())
        return out

    def warm(self, runs: Sequence[Run], warmup: int) -> list[list[float]]:
        """``warmup`` iterations of each run, not samples (their times may size the loop)."""
        return [self.time(r, warmup) for r in runs]

    def turns(self, runs: Sequence[Run], iters: int, repetitions: int, events: Any = None,
              device: Sequence[list[float]] | None = None,
              waits: Sequence[list[float]] | None = None,
              on_turn: Callable[[int], object] | None = None) -> list[list[float]]:
        """``iters`` samples of each run in ``repetitions`` blocks in which the runs take turns,
        order reversed every other block, so that each sees the same stretch of the machine;
        ``on_turn(i)`` before each block of run ``i``, ``waits[i]`` its barrier waits."""
        samples: list[list[float]] = [[] for _ in runs]
        block = math.ceil(iters / repetitions)
        order = list(range(len(runs)))
        for rep in range(repetitions):
            for i in order if rep % 2 == 0 else order[::-1]:
                if on_turn is not None:
                    on_turn(i)
                self.time(runs[i], block, samples[i], events, device[i] if device else None,
                          waits[i] if waits is not None else None)
        return samples
