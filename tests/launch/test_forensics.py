"""Hang forensics on recorded slots (bench/launch/forensics.py, rankstate.py): who never arrived,
where each live rank waits, in one line; slots of an earlier job are not read as this job's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.launch import forensics
from bench.launch.rankstate import Slots, Where


def slot(rank: int, host: str, beat: int, case: str = "c", **state: Any) -> dict[str, Any]:
    return {"rank": rank, "host": host, "pid": 100 + rank, "token": "t", "beat": beat,
            "case": case, **state}


RING = {"algorithm": "ring", "vendor": False, "steps": 6}


def test_a_dead_rank_and_where_each_live_rank_waits() -> None:
    before = {0: slot(0, "a", 5, **RING, step=3, recv_from=[3], send_to=[1]),
              1: slot(1, "a", 5, **RING),
              2: slot(2, "b", 5, **RING, step=2, recv_from=[], send_to=[3]),
              3: slot(3, "b", 9, **RING, step=1, recv_from=[2], send_to=[0])}
    after = {r: {**s, "beat": s["beat"] + (r != 3)} for r, s in before.items()}  # 3: no beat
    hang = forensics.explain("c", "exceeded case_timeout_s=5", before, after, 5)
    assert hang.line == (
        "case 'c' exceeded case_timeout_s=5: "
        "rank 3 on b never arrived: not responding (killed or stopped; last in step 2 of 6 for "
        "rank 2 on b); rank 4 never arrived: no state (never started, or its host does not see "
        "the run directory); rank 0 on a waits in step 4 of 6 for rank 3 on b; rank 2 on b waits "
        "in step 3 of 6 sending to rank 3 on b; rank 1 on a waits between iterations of ring "
        "(the iteration's barrier)")
    assert [(r.rank, r.state) for r in hang.missing] == [(3, "not responding"), (4, "no slot")]
    assert hang.as_dict()["waiting"][0] == {
        "rank": 0, "host": "a", "state": "waits", "step": 4, "steps": 6, "peer": 3,
        "peer_host": "b", "op": "recv", "case": None, "algorithm": "ring", "vendor": False}


def test_a_rank_still_in_another_case_and_ranks_in_a_vendor_call() -> None:
    native = {"algorithm": "native", "vendor": True}
    before = {0: slot(0, "a", 1, **native), 1: slot(1, "a", 1, **native),
              2: slot(2, "b", 1, case="earlier")}
    after = {r: {**s, "beat": 2} for r, s in before.items()}
    hang = forensics.explain("c", "x", before, after, 3)
    assert hang.why == ("x: rank 2 on b never arrived: still in 'earlier'; ranks 0, 1 on a wait in "
                        "a vendor call (native)")


def test_the_first_claim_writes_hang_json_and_the_second_does_not(tmp_path: Path) -> None:
    h = forensics.explain("c", "x", {}, {}, 1)
    assert forensics.claim(tmp_path, h, 0) and not forensics.claim(tmp_path, h, 1)
    assert forensics.take(tmp_path) == h.as_dict() and forensics.take(tmp_path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []


class Plan:
    def __init__(self) -> None:
        self.trace = [(0, (3,), (1,)), (2, (1,), ())]  # step 1 had nothing for this rank
        self.nsteps, self.at = 4, 1


def test_a_slot_says_the_schedule_step_and_world_ranks_and_only_its_job_reads_it(
        tmp_path: Path) -> None:
    where = Where()
    where.enter(Plan(), "ring", (10, 11, 12, 13))  # a sub-communicator's ranks in the world
    Slots(tmp_path, 11, "t", "a").write(7, "c", where)
    Slots(tmp_path, 12, "old", "a").write(1, "c", where)  # an earlier job's
    got = Slots(tmp_path, 0, "t").read(13)
    assert list(got) == [11]
    assert {k: got[11][k] for k in ("beat", "case", "step", "steps", "recv_from", "send_to")} == \
        {"beat": 7, "case": "c", "step": 2, "steps": 4, "recv_from": [11], "send_to": []}
    where.leave()
    assert where.state() == {}
