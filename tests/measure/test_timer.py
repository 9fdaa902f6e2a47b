"""The harness's one timing loop (bench/measure/timer.py): what happens around each iteration,
in which order, what a sample is, and how runs take turns; exact, with a clock that counts."""

from __future__ import annotations

from bench.measure.timer import Timer


class Events:
    """A device clock that logs and reports a fixed device time."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> None:
        self.log.append("stop")

    def elapsed_us(self) -> float:
        return 7.0


def test_each_iteration_is_barrier_clock_run_sync_clock_and_its_device_time() -> None:
    log: list[str] = []
    ticks = iter(range(0, 10**6, 3000))

    def clock() -> int:
        log.append("clock")
        return next(ticks)

    timer = Timer(lambda: log.append("barrier"), lambda: log.append("sync"), clock)
    device: list[float] = []
    out = timer.time(lambda: log.append("run"), 2, None, Events(log), device)
    assert out == [3.0, 3.0] and device == [7.0, 7.0]
    assert log == ["barrier", "clock", "start", "run", "stop", "sync", "clock"] * 2


def test_runs_take_turns_in_blocks_order_reversed_every_other_block() -> None:
    ran: list[str] = []
    ticks = iter(range(0, 10**6, 1000))
    timer = Timer(clock=lambda: next(ticks))
    runs = [lambda: ran.append("a"), lambda: ran.append("b"), lambda: ran.append("c")]
    assert [len(w) for w in timer.warm(runs, 2)] == [2, 2, 2]
    ran.clear()
    samples = timer.turns(runs, 4, 2)
    assert ran == list("aabbccccbbaa") and [len(s) for s in samples] == [4, 4, 4]
    assert {x for s in samples for x in s} == {1.0}
