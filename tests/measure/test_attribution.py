"""Per-rank attribution on recorded per-rank data (bench/measure/attribution.py): the rank that
waited least in the barrier arrived last, the longest sample finished last; who is named
consistently late, and who is not."""

from __future__ import annotations

import numpy as np

from bench.measure import attribution
from bench.measure.timer import Timer


def arrays(n: int, late: dict[int, float], ranks: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """``ranks`` x ``n`` samples of 100 µs and barrier waits of 50 µs; rank r of ``late``
    arrives ``late[r]`` µs late (waits that much less) and finishes that much later."""
    samples = np.full((ranks, n), 100.0)
    waits = np.full((ranks, n), 50.0)
    for r, d in late.items():
        samples[r] += d
        waits[r] -= d
    return samples, waits


def test_last_to_arrive_and_to_finish_per_iteration() -> None:
    samples = np.array([[10.0, 30.0], [20.0, 5.0]])
    waits = np.array([[1.0, 9.0], [4.0, 2.0]])
    arrived, finished = attribution.last_ranks(samples, waits)
    assert arrived.tolist() == [0, 1] and finished.tolist() == [1, 0]


def test_a_rank_late_in_every_iteration_is_named_with_its_host() -> None:
    samples, waits = arrays(20, {2: 30.0})
    got = attribution.fields(samples, waits, ["a", "a", "b", "b"])
    assert got["last_arrived_ranks"] == [2] * 20 and got["last_finished_ranks"] == [2] * 20
    assert got["late"] == [
        {"at": "arrival", "rank": 2, "host": "b", "share": 1.0, "margin_us": 30.0},
        {"at": "finish", "rank": 2, "host": "b", "share": 1.0, "margin_us": 30.0}]
    rec = {"collective": "all_reduce", "nbytes": 1024, "algorithm": "ring", "world_size": 4,
           "iters": 20, **got}
    assert attribution.notes(rec)[0] == ("rank 2 on b arrived last in 100 % of 20 iterations "
                                         "(by 30 µs, median): all_reduce 1024 B ring p=4")


def test_a_slow_host_is_named_when_its_ranks_take_turns_being_last() -> None:
    samples, waits = arrays(20, {2: 30.0, 3: 30.0})
    samples[2, ::2] += 1.0  # ranks 2 and 3 alternate as the very last
    samples[3, 1::2] += 1.0
    got = attribution.fields(samples, waits, ["a", "a", "b", "b"])
    assert [(e["at"], e["rank"], e["host"], e["share"]) for e in got["late"]
            if e["at"] == "finish"] == [("finish", None, "b", 1.0)]


def test_not_named_below_the_share_the_margin_or_the_iterations() -> None:
    samples, waits = arrays(20, {1: 30.0})
    samples[1, :6] -= 60.0  # last in 14 of 20 iterations: 70 % < 75 %
    waits[1, :6] += 60.0
    assert attribution.fields(samples, waits, ["a", "b", "c", "d"])["late"] == []
    tiny = arrays(20, {1: 2.0})  # a barrier's release order: 2 µs of 100, under 10 %
    assert attribution.fields(*tiny, ["a", "b", "c", "d"])["late"] == []
    few = arrays(attribution.MIN_ITERS - 1, {1: 30.0})
    assert attribution.fields(*few, ["a", "b", "c", "d"])["late"] == []


def test_the_timer_records_each_barrier_wait_outside_the_timed_region() -> None:
    ticks = iter([0, 4000, 9000, 10000, 13000, 20000])  # before, after barrier, end; twice
    log: list[str] = []
    timer = Timer(lambda: log.append("barrier"), clock=lambda: next(ticks))
    waits: list[float] = []
    assert timer.time(lambda: log.append("run"), 2, waits=waits) == [5.0, 7.0]
    assert waits == [4.0, 3.0] and log == ["barrier", "run"] * 2
