"""Pipeline idle time per stage: the schedules' modelled bubble (exact fractions), the harness's
idle arithmetic on given timings, the wait hook's scope, and one real self-launched run of
every pipeline schedule at 1 and 2 ranks beside ddp (idle fields present only for pipelines,
0 <= idle <= step on every rank, one entry per rank, communication counted as without the
hook). No wall-clock threshold is asserted: only counts and bounds that hold by construction."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")

from bench.store.records import iter_records  # noqa: E402
from bench.training.measure import Idle, RankResult  # noqa: E402
from bench.training.memory import HeldBytes  # noqa: E402
from bench.training.strategies import pipeline  # noqa: E402
from bench.training.strategies.pipeline import WaitClock, bubble_fraction, timed_waits  # noqa: E402
from tests.conftest import ROOT, clean_env  # noqa: E402

SCENARIO = """
name: pipeline-idle
kind: training
models: [gpt-tiny]
strategies: [ddp, pipeline:gpipe, pipeline:1f1b, pipeline:interleaved]
world_sizes: [1, 2]
batch_size: 8
steps: 2
warmup: 1
backend: gloo
case_timeout_s: 120
"""
B, S, H = 8, 16, 32  # batch, sequence and width of gpt-tiny
M = 4  # microbatches (the default)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_single_stage_bubble_is_p_minus_1_over_m_plus_p_minus_1(schedule: str) -> None:
    for p in range(1, 9):
        for m in range(1, 17):
            assert bubble_fraction(schedule, p, m) == Fraction(p - 1, m + p - 1), (p, m)


def test_interleaved_bubble() -> None:
    """(p - 1)/(v m + p - 1) whenever m >= p (torch's rounds: m a multiple of m // p); with
    fewer microbatches than ranks torch's interleaved order idles more."""
    for p in range(1, 9):
        for v in (1, 2, 3):
            for m in range(p, 17):
                if m % max(1, m // p):
                    continue  # torch refuses it
                assert bubble_fraction("interleaved", p, m, v) == Fraction(p - 1, v * m + p - 1)
    assert bubble_fraction("interleaved", 4, 2, 2) == Fraction(5, 9)  # formula: 3/7
    assert bubble_fraction("interleaved", 8, 4, 2) == Fraction(11, 19)  # formula: 7/15


def _rank(step_ns: tuple[int, ...], wait_ns: tuple[int, ...]) -> RankResult:
    return RankResult(HeldBytes(0, 0, 0), None, 0, 0, 0, step_ns, wait_ns, 3)


def test_idle_is_waits_plus_the_wait_for_the_slowest_rank() -> None:
    ranks = [_rank((10_000_000, 8_000_000), (1_000_000, 2_000_000)),
             _rank((6_000_000, 12_000_000), (3_000_000, 0))]
    idle = Idle.of(ranks, 0.2)
    # kept steps: 10 and 12 ms; rank 0: 1 + 0 and 2 + 4; rank 1: 3 + 4 and 0 + 0
    assert idle.ms_by_rank == [3.5, 3.5]
    assert idle.fraction_by_rank == [7 / 22, 7 / 22]
    assert idle.wait_ms_by_rank == [1.5, 1.5]
    assert idle.waits_per_step == [3, 3] and idle.bubble_model == 0.2


def test_the_wait_hook_is_restored_and_counts_only_real_waits() -> None:
    original = pipeline.torch_schedules()._wait_batch_p2p
    clock = WaitClock()
    with timed_waits(clock):
        assert pipeline.torch_schedules()._wait_batch_p2p is not original
        pipeline.torch_schedules()._wait_batch_p2p([])
    assert pipeline.torch_schedules()._wait_batch_p2p is original
    assert clock.take()[1] == 0 and clock.take() == (0, 0)
    with pytest.raises(RuntimeError), timed_waits(clock):
        raise RuntimeError("a failed step")
    assert pipeline.torch_schedules()._wait_batch_p2p is original


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    d = tmp_path_factory.mktemp("idle")
    (d / "sc.yaml").write_text(SCENARIO)
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(d / "sc.yaml"), "--out",
                           str(d / "run"), "--no-progress", "--no-report"], capture_output=True, text=True,
                          timeout=600, env=clean_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    recs = list(iter_records(d / "run"))
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs)
    return recs


IDLE = ("stage_idle_ms_by_rank", "stage_idle_fraction_by_rank", "stage_wait_ms_by_rank",
        "stage_waits_per_step_by_rank", "bubble_fraction_model")


@pytest.mark.training
@pytest.mark.timeout(600)
def test_idle_fields_only_on_pipeline_records(records: list[dict[str, Any]]) -> None:
    for r in records:
        pipe = r["strategy_name"] == "pipeline"
        assert all((k in r) == pipe for k in IDLE), r["strategy"]
        if pipe:
            assert all(len(r[k]) == r["world_size"] for k in IDLE[:-1])


@pytest.mark.training
def test_idle_lies_within_the_step_on_every_rank(records: list[dict[str, Any]]) -> None:
    for r in records:
        if r["strategy_name"] != "pipeline":
            continue
        mean_step = sum(r["samples_ms"]) / len(r["samples_ms"])
        for idle, frac, wait in zip(r["stage_idle_ms_by_rank"], r["stage_idle_fraction_by_rank"],
                                    r["stage_wait_ms_by_rank"]):
            assert 0 <= frac <= 1
            assert 0 <= wait <= idle <= mean_step + 1e-4  # samples_ms: 4 decimals
        if r["world_size"] == 1:  # no neighbour, nobody slower
            assert r["stage_idle_ms_by_rank"] == [0.0] and r["stage_waits_per_step_by_rank"] == [0]


@pytest.mark.training
def test_bubble_model_and_waits_per_step(records: list[dict[str, Any]]) -> None:
    want = {("pipeline[gpipe,m=4]", 2): Fraction(1, 5), ("pipeline[1f1b,m=4]", 2): Fraction(1, 5),
            ("pipeline[interleaved,m=4]", 2): Fraction(1, 9)}
    seen = 0
    for r in records:
        if r["strategy_name"] != "pipeline":
            continue
        key = (r["strategy"], r["world_size"])
        assert r["bubble_fraction_model"] == float(want.get(key, Fraction(0))), key
        seen += 1
        if r["world_size"] == 2:
            assert r["stage_waits_per_step_by_rank"] == WAITS[r["strategy"]], key
    assert seen == 6


# Waits with works, per step, at 2 ranks. GPipe: the first stage's m forward sends and m
# backward receives, the last stage's m receives and m sends, each waited on alone. 1F1B fuses
# a send with the next receive: first stage: microbatch 0's send alone, sends 1-3 fused with
# backward receives 0-2, receive 3 alone; last stage: receive 0 alone, backward sends 0-2 fused
# with forward receives 1-3, send 3 alone. Interleaved (stages 0, 2 on rank 0; 1, 3 on rank 1):
# torch's runtime waits on each of a rank's 6 m messages alone.
WAITS = {"pipeline[gpipe,m=4]": [2 * M, 2 * M], "pipeline[1f1b,m=4]": [M + 1, M + 1],
         "pipeline[interleaved,m=4]": [6 * M, 6 * M]}


@pytest.mark.training
def test_communication_is_counted_as_without_the_hook(records: list[dict[str, Any]]) -> None:
    """Every boundary carries the whole batch's activations forward and its gradients back."""
    act = B * S * H * 4
    for r in records:
        if r["strategy_name"] != "pipeline" or r["world_size"] != 2:
            continue
        v = 2 if "interleaved" in r["strategy"] else 1
        stages = 2 * v
        for rank in range(2):
            mine = [rank + 2 * k for k in range(v)]
            fwd = sum(1 for s in mine if s != stages - 1) * act
            bwd = sum(1 for s in mine if s != 0) * act
            assert r["comm_by_type_by_rank"][rank] == {"send": fwd + bwd, "recv": fwd + bwd}


def test_advise_lists_measured_idle_beside_the_model() -> None:
    from bench.advise.validate import idle_checks, idle_lines, idle_record

    rec = {"model": "gpt-tiny", "strategy": "pipeline[gpipe,m=4]", "world_size": 2,
           "step_time_ms_median": 20.0, "stage_idle_ms_by_rank": [6.0, 4.0],
           "stage_idle_fraction_by_rank": [0.3, 0.2], "bubble_fraction_model": 0.2}
    single = {**rec, "world_size": 1, "stage_idle_fraction_by_rank": [0.0]}
    ddp = {"model": "gpt-tiny", "strategy": "ddp", "world_size": 2, "step_time_ms_median": 9.0}
    checks = idle_checks([single, rec, ddp])
    assert len(checks) == 1 and checks[0].mean == 0.25
    lines = idle_lines(checks)
    assert len(lines) == 3 and lines[2].split()[-4:] == ["0.30", "0.20", "0.25", "0.20"]
    out = idle_record(checks[0], {"topology": "1x2"})
    assert out["kind"] == "advice" and out["bubble_check"] and "place" not in out
    assert idle_lines([]) == []
