"""The definitions of ``kind: concurrent`` on synthetic numbers: communicators of a group, OSU's
overlap %, the alone/together table, the scenario's load-time checks, and advise's use of a
measured slowdown and overlap."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bench.advise.calls import Call
from bench.advise.interference import Measured
from bench.advise.step import Priced, step_time
from bench.concurrent import define
from bench.concurrent.table import group_rows, overlap_rows, slowdowns
from bench.scenario_base import ScenarioError, parse_scenario
from kernels.topology import Topology


def test_communicators_by_node_across_all_and_explicit() -> None:
    topo = Topology.blocks(6, 3)
    assert define.communicators("node", topo) == [[0, 1, 2], [3, 4, 5]]
    assert define.communicators("across", topo) == [[0, 3], [1, 4], [2, 5]]
    assert define.communicators("all", topo) == [[0, 1, 2, 3, 4, 5]]
    assert define.communicators([[5, 0], [2]], topo) == [[5, 0], [2]]
    with pytest.raises(ValueError, match="rank 6 is not in a job of 6 ranks"):
        define.communicators([[6]], topo)


@pytest.mark.parametrize(("overall", "compute", "comm", "unclamped", "pct"), [
    (100.0, 100.0, 100.0, 100.0, 100.0),  # the communication fully hidden
    (200.0, 100.0, 100.0, 0.0, 0.0),  # none of it: compute then communication
    (125.0, 100.0, 100.0, 75.0, 75.0),
    (150.0, 100.0, 40.0, -25.0, 0.0),  # slower than both in turn: OSU's clamp at 0
    (90.0, 100.0, 50.0, 120.0, 100.0),  # overall below compute (noise): clamped to 100
])
def test_overlap_is_osu_s_definition_clamped(overall: float, compute: float, comm: float,
                                             unclamped: float, pct: float) -> None:
    assert define.overlap_unclamped(overall, compute, comm) == pytest.approx(unclamped)
    assert define.overlap_pct(overall, compute, comm) == pytest.approx(pct)


def test_test_calls_are_taken_out_of_compute_as_osu_does() -> None:
    assert define.overlap_unclamped(130.0, 110.0, 100.0, test_us=10.0) == pytest.approx(70.0)
    assert define.mean_over_ranks([1.0, 2.0, 6.0]) == 3.0


def _rec(group: str, members: list[int], mode: str, nbytes: int, t: float,
         status: str = "ok") -> dict[str, Any]:
    return {"kind": "concurrent", "status": status, "group": group, "members": members,
            "mode": mode, "collective": "all_reduce", "algorithm": "native", "nbytes": nbytes,
            "time_us_median": t, "together_with": ["dp"] if mode == "together" else []}


def test_table_pairs_alone_and_together_and_takes_the_worst_communicator_at_the_top_size() -> None:
    recs = [_rec("tp", [0, 1], "alone", 1024, 10.0), _rec("tp", [0, 1], "together", 1024, 30.0),
            _rec("tp", [2, 3], "alone", 1024, 10.0), _rec("tp", [2, 3], "together", 1024, 50.0),
            _rec("tp", [0, 1], "alone", 64, 1.0), _rec("tp", [0, 1], "together", 64, 9.0),
            _rec("tp", [2, 3], "alone", 4096, 5.0),  # no together record: no row
            _rec("tp", [2, 3], "together", 4096, 9.0, status="wrong")]
    rows = group_rows(recs)
    assert [(r.members, r.nbytes, r.slowdown) for r in rows] == [
        ((0, 1), 1024, 3.0), ((2, 3), 1024, 5.0), ((0, 1), 64, 9.0)]
    assert rows[0].together_with == ("dp",)
    rounds = group_rows([*recs[:2], _rec("tp", [0, 1], "alone", 1024, 20.0),
                         _rec("tp", [0, 1], "together", 1024, 20.0),
                         _rec("tp", [0, 1], "alone", 1024, 12.0)])
    assert [(r.alone_us, r.together_us, r.rounds) for r in rounds] == [(12.0, 25.0, 2)]
    assert slowdowns(rows) == {"tp": 5.0}
    assert overlap_rows([{"kind": "overlap", "status": "wrong"}]) == []


@pytest.mark.parametrize(("raw", "error"), [
    ({}, "give groups (two or more) or overlap cases"),
    ({"groups": [{"name": "a", "collective": "all_reduce"}]}, "one group runs alone"),
    ({"overlap": [{"algorithm": "ring"}]}, "needs progress: thread"),
    ({"groups": [{"name": "a", "collective": "all_reduce", "members": [[0, 1], [1, 2]]},
                 {"name": "b", "collective": "all_reduce"}]}, "a rank in two communicators"),
    ({"overlap": [{"algorithm": "nope", "progress": "thread"}]}, "unknown algorithm 'nope'"),
])
def test_scenario_mistakes_are_one_line_at_load_time(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(error)):
        parse_scenario({"kind": "concurrent", **raw}, "c.yaml")


def _priced(group: str, seconds: float, overlap: bool, phase: str = "backward") -> Priced:
    return Priced(Call("all_reduce", 1 << 20, 1, group, phase, overlap), seconds, "native", "ring")


def test_advise_applies_a_slowdown_only_beside_a_group_it_was_measured_beside() -> None:
    m = Measured({"tensor": 2.0}, {"tensor": ("data",)})
    alone = [_priced("tensor", 1.0, False)]
    beside = [_priced("tensor", 1.0, False), _priced("data", 3.0, True)]
    assert [p.seconds for p in m.apply(alone)] == [1.0]
    assert [p.seconds for p in m.apply(beside)] == [2.0, 3.0]


@pytest.mark.parametrize(("f", "bound"), [(0.0, "no_overlap"), (1.0, "full_overlap")])
def test_measured_overlap_meets_the_bounds_at_none_and_all(f: float, bound: str) -> None:
    priced = [_priced("data", 3.0, True), _priced("data", 2.0, True, "forward"),
              _priced("tensor", 1.0, False)]
    st = step_time(priced, 10.0, 1, 1, 1)
    got = Measured(overlap=f).overlapped(st, priced)
    assert got.time == pytest.approx(getattr(st, bound))
    assert (got.no_overlap, got.full_overlap) == (st.no_overlap, st.full_overlap)
    half = Measured(overlap=0.5).overlapped(st, priced)
    assert half.time == pytest.approx(10.0 + 1.0 + 2.5)  # compute + tensor + half of the pool


def test_flows_on_one_link_share_its_bandwidth() -> None:
    from benchmarks.concurrency import slowdown, together_s

    assert together_s(0.03, 1e6, 5e7, 2) == pytest.approx(0.05)  # + 1 MB at 50 MB/s
    assert slowdown(0.02, 1e6, 5e7, 1) == 1.0
    assert slowdown(0.02, 1e6, 5e7, 3) == pytest.approx(3.0)  # bandwidth-bound: flows times
    with pytest.raises(ValueError, match="flows must be >= 1"):
        together_s(1.0, 1.0, 1.0, 0)
