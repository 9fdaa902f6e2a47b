"""One real 4-rank job of ``kind: concurrent`` (2 nodes of 2 ranks): a TP all_reduce inside each
node beside a DP ring reduce_scatter across them, each alone and together, and one overlap case
(a commbench ring progressed on a thread beside a GEMM). Exact structure only: keys, which ranks
form each communicator, bytes, and the overlap % recomputed from the record's own times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.concurrent import define
from bench.concurrent.table import group_rows
from bench.store.records import iter_records
from tests.conftest import commbench

SCENARIO = """
kind: concurrent
world_size: 4
ranks_per_node: 2
sizes: [16KiB]
rounds: 1
timing: {warmup: 1, iters: 4, repetitions: 1}
groups:
  - {name: tp, collective: all_reduce, members: node}
  - {name: dp, collective: reduce_scatter, algorithm: ring, members: across}
overlap:
  - {collective: all_reduce, algorithm: ring, progress: thread}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("concurrent")
    (tmp / "c.yaml").write_text(SCENARIO)
    res = commbench("run", str(tmp / "c.yaml"), "--out", str(tmp / "run"), "--no-report",
                    "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp / "run"


@pytest.fixture(scope="module")
def records(run: Path) -> list[dict[str, Any]]:
    return list(iter_records(run))


@pytest.mark.slow
def test_each_communicator_of_each_group_is_measured_alone_and_together(
        records: list[dict[str, Any]]) -> None:
    got = sorted((r["group"], tuple(r["members"]), r["mode"], r["collective"], r["algorithm"],
                  r["nbytes"], r["count"], r["world_size"], r["status"], r["wrong"])
                 for r in records if r["kind"] == "concurrent")
    want = sorted((g, m, mode, c, a, 16384, 4096, 2, "ok", 0)
                  for g, c, a, members in (("tp", "all_reduce", "native", ((0, 1), (2, 3))),
                                           ("dp", "reduce_scatter", "ring", ((0, 2), (1, 3))))
                  for m in members for mode in ("alone", "together"))
    assert got == want
    by = {(r["group"], r["mode"]): r for r in records if r["kind"] == "concurrent"}
    assert by[("tp", "together")]["together_with"] == ["dp"]
    assert by[("tp", "alone")]["together_with"] == [] and by[("tp", "alone")]["background"] is None
    assert by[("dp", "alone")]["bytes_sent_max"] == 8192  # ring reduce_scatter: (p-1)/p of 16 KiB
    assert {r["concurrency"] for r in records if r["kind"] == "concurrent"} == {
        "a thread per communicator on ranks in several (MPI_THREAD_MULTIPLE)"}
    assert {r["mpi_thread_provided"] for r in records} == {"multiple"}
    rows = group_rows(records)
    assert sorted((r.group, r.members) for r in rows) == [
        ("dp", (0, 2)), ("dp", (1, 3)), ("tp", (0, 1)), ("tp", (2, 3))]
    for row in rows:
        assert row.slowdown == row.together_us / row.alone_us


@pytest.mark.slow
def test_the_overlap_case_is_osu_s_definition_of_its_own_times(records: list[dict[str, Any]]) -> None:
    (o,) = [r for r in records if r["kind"] == "overlap"]
    assert (o["collective"], o["algorithm"], o["progress"], o["nbytes"], o["count"],
            o["world_size"], o["status"], o["wrong"], o["test_us"]) == (
        "all_reduce", "ring", "thread", 16384, 4096, 4, "ok", 0, 0.0)
    assert "progress thread" in o["progress_how"]
    for part in ("overall", "compute", "comm"):
        ranks = o[f"{part}_us_ranks"]
        assert len(ranks) == 4 and o[f"{part}_us"] == define.mean_over_ranks(ranks)
    assert o["overlap_pct_unclamped"] == define.overlap_unclamped(
        o["overall_us"], o["compute_us"], o["comm_us"])
    assert o["overlap_pct"] == min(100.0, max(0.0, o["overlap_pct_unclamped"]))
    assert 0.0 <= o["overlap_pct"] <= 100.0
    target = o["comm_us_before_calibration"]  # the GEMM kept: the trial closest to it
    assert o["gemm_n"] == min(o["gemm_trials"], key=lambda t: abs(t[1] - target))[0]
    assert all(8 <= n <= 4096 for n, _ in o["gemm_trials"])
