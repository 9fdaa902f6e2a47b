"""A replay run for real (one mpiexec of 2 ranks, shared by the assertions): every call through
the harness, checked exactly; the step's communication per group and per collective sums to it;
records keyed apart for the gate. And the parts without a launch: the scenario's checks, the
layout's rescaling, the step's sums, predict at 8x the ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.gate.keys import cases
from bench.replay.scale import ScaleError, rescale
from bench.replay.scenario import ReplayScenario
from bench.scenario_base import ScenarioError, parse_scenario
from bench.store.records import iter_records
from tests.conftest import commbench

DATA = Path(__file__).parents[1] / "data" / "replay"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("replay")
    assert main(["import", "nccl-coll", str(DATA / "nccl-coll.log"), "--out",
                 str(tmp / "step.yaml")]) == 0
    with (tmp / "step.yaml").open("a") as f:  # few iterations: the records, not the times
        f.write("timing: {warmup: 1, iters: 3, repetitions: 1}\n")
    run = tmp / "run"
    res = commbench("run", str(tmp / "step.yaml"), "--out", str(run), "--no-report",
                    "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    return run


@pytest.mark.slow
def test_every_call_measured_and_checked(replayed: Path) -> None:
    recs = list(iter_records(replayed, samples=False))
    got = sorted((r["collective"], r["nbytes"], r["dtype"], r["replay_dtype"], r["replay_calls"],
                  r["strategy"]) for r in recs)
    assert got == [("all_gather", 1024, "float16", "bfloat16", 1, "replay 0,1"),  # same bytes
                   ("all_reduce", 4096, "float32", "float32", 1, "replay 0,1"),
                   ("broadcast", 256, "float32", "float32", 1, "replay 0,1 from 0")]
    assert all(r["status"] == "ok" and r["wrong"] == 0 for r in recs)
    assert len(cases(recs)) == len(recs)  # one gate key per call


@pytest.mark.slow
def test_step_sums_per_group_and_collective(replayed: Path) -> None:
    (s,) = json.loads((replayed / "replay.json").read_text())
    recs = list(iter_records(replayed, samples=False))
    assert s["step_us"] == pytest.approx(sum(r["replay_step_us"] for r in recs))
    assert sum(s["by_group"].values()) == pytest.approx(s["step_us"])
    assert sum(s["by_collective"].values()) == pytest.approx(s["step_us"])
    assert s["calls"] == 3 and s["complete"] and not s["predicted"]


def _sc(calls: list[dict], world: int = 4) -> ReplayScenario:
    return parse_scenario({"kind": "replay", "world_size": world, "calls": calls}, "t.yaml")


def test_scenario_checks() -> None:
    with pytest.raises(ScenarioError, match=r"calls\.0\.group: rank 4 of a 4-rank job"):
        _sc([{"op": "all_reduce", "group": [0, 4], "nbytes": 8}])
    with pytest.raises(ScenarioError, match="not 3 equal blocks"):
        _sc([{"op": "all_gather", "group": [0, 1, 2], "nbytes": 8}])
    with pytest.raises(ScenarioError, match="a send is between two ranks"):
        _sc([{"op": "send", "group": [0, 1, 2], "nbytes": 8, "root": 0}])
    sc = _sc([{"op": "all_reduce", "group": [0, 1], "nbytes": 3, "dtype": "int8"}])
    (case, n), = sc.cases()
    assert (case.dtype, case.count, case.nbytes, n) == ("float32", 1, 4, 1)  # stands in, rounded up


def test_rescale_by_layout() -> None:
    # tensor groups {0,1},{2,3} and data groups {0,2},{1,3} of a 2x2 layout, at 8 ranks
    sc = _sc([{"op": "all_reduce", "group": [0, 1], "nbytes": 64},
              {"op": "all_reduce", "group": [2, 3], "nbytes": 64},
              {"op": "reduce_scatter", "group": [0, 2], "nbytes": 64},
              {"op": "reduce_scatter", "group": [1, 3], "nbytes": 64}])
    groups = sorted((s.case.collective, s.case.group) for s in rescale(sc, 8))
    assert groups == [("all_reduce", (0, 1)), ("all_reduce", (2, 3)), ("all_reduce", (4, 5)),
                      ("all_reduce", (6, 7)), ("reduce_scatter", (0, 2, 4, 6)),
                      ("reduce_scatter", (1, 3, 5, 7))]
    with pytest.raises(ScaleError, match="whole multiples of 4"):
        rescale(sc, 6)


def test_predict_at_8x_sums_to_the_step(tmp_path: Path) -> None:
    assert main(["import", "torch-profiler", *map(str, sorted(DATA.glob("pipeline-mlp-p4-*.json"))),
                 "--out", str(tmp_path / "s.yaml")]) == 0
    assert main(["predict", "--replay", str(tmp_path / "s.yaml"), "--profile", "h100-ib400",
                 "--topology", "4x8", "--world-sizes", "32", "--out", str(tmp_path / "p")]) == 0
    (s,) = json.loads((tmp_path / "p" / "replay-p32.json").read_text())
    assert s["predicted"] and s["complete"] and s["critical_rank"] in (1, 2)
    assert set(s["by_group"]) == {"0,1", "1,2"} or set(s["by_group"]) == {"1,2", "2,3"}
    assert sum(s["by_group"].values()) == pytest.approx(s["step_us"], rel=1e-12)
    recs = list(iter_records(tmp_path / "p", samples=False))
    assert {r["world_size"] for r in recs} == {2} and len({tuple(r["replay_group"]) for r in recs}) == 24
