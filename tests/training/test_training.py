"""Training strategies for real: every strategy on gpt-tiny and mlp at 4 ranks (ps at 3) under
torch's launcher (the session's shared run, tests/conftest.py, also read by
tests/advise/test_advise_comm.py), checked
against the single-process reference, the analytic memory model and the bytes each strategy must
send."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")

from bench.collective.scenario import ScenarioError, load_scenario  # noqa: E402
from bench.store.records import load_results  # noqa: E402
from bench.training.strategies.ddp import bf16_hook_allowed  # noqa: E402

TOL = {"ddp[fp16]": 5e-3}  # compression hook: stated tolerance (bf16 needs NCCL)


@pytest.fixture
def records(training_records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's shared training run (tests/conftest.py: TRAINING_SCENARIO, PS_SCENARIO)."""
    return training_records


def _spec(rec: dict[str, Any]) -> Any:
    from bench.training.scenario import StrategySpec

    return StrategySpec.model_validate(rec["strategy_options"])


@pytest.mark.training
@pytest.mark.timeout(900)  # the shared fixture's launches run inside the first test using it
def test_every_case_ran(records: list[dict[str, Any]]) -> None:
    assert len(records) == 2 * 18 + 2 * 2  # 18 strategies x 2 models at 4 ranks, ps at 3
    assert all(r["status"] == "ok" for r in records), [r for r in records if r["status"] != "ok"]
    for r in records:
        assert r["schema_version"] == 1 and r["kind"] == "training"
        assert len(r["samples_ms"]) == 1 and r["step_time_ms_median"] > 0
        assert r["samples_per_s"] > 0 and r["mem_peak_bytes"] > 0
        assert (r["tokens_per_s"] is not None) == (r["model"] == "gpt-tiny")


@pytest.mark.training
def test_losses_match_single_process(records: list[dict[str, Any]]) -> None:
    for r in records:
        tol = TOL.get(r["strategy"], 1e-5)
        assert r["loss_max_abs_diff"] <= tol, (r["strategy"], r["model"], r["world_size"],
                                               r["loss"], r["loss_reference"])
        assert r["loss"][-1] < r["loss"][0] or r["model"] == "mlp"  # learnable data
    # compression really compresses: the fp16 trajectory is not bit-identical
    assert any(r["loss_max_abs_diff"] > 0 for r in records if r["strategy"] == "ddp[fp16]")


@pytest.mark.training
def test_held_bytes_equal_the_analytic_model(records: list[dict[str, Any]]) -> None:
    from bench.models import MODELS
    from bench.training.analytic import FP32, predict

    for r in records:
        model, spec, n = MODELS.get(r["model"]), _spec(r), r["world_size"]
        for rank in range(n):
            e = predict(model, spec, n, rank, FP32)
            got = (r["mem_params_bytes_by_rank"][rank], r["mem_grads_bytes_by_rank"][rank],
                   r["mem_optim_bytes_by_rank"][rank])
            assert got == (e.params, e.grads, e.optim), (r["strategy"], r["model"], n, rank)


def _numels(model: Any) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for p in model.build_meta().parameters()]


def _expected_comm(r: dict[str, Any], rank: int) -> dict[str, int] | None:
    """What the strategy must send on ``rank`` per step, from shapes alone."""
    from bench.models import MODELS
    from bench.training.analytic import chunk_rows
    from kernels.algorithm import Problem, get_algorithm
    from kernels.topology import Topology

    model, spec, n = MODELS.get(r["model"]), _spec(r), r["world_size"]
    shapes = _numels(model)
    full = sum(math.prod(s) for s in shapes)
    padded = sum(chunk_rows(s[0], n, 0) * math.prod(s[1:]) for s in shapes) * n
    batch, tokens = 8, (model.config.seq_len if r["model"] == "gpt-tiny" else 1)
    if spec.name == "ddp":
        if spec.options.hook in ("fp16", "bf16"):
            return {"all_reduce": 2 * full}
        if spec.options.hook == "default":
            return {"all_reduce": 4 * full}
        # one bucket holds the whole tiny model; the schedule says what this rank sends
        alg = get_algorithm("all_reduce", spec.options.hook)
        sched = alg.schedule(Problem(Topology.blocks(n, n), full, 4), rank)
        return {"send": _sent(sched), "recv": _recv(sched)}
    if spec.name == "zero1":
        return {"all_reduce": 4 * full, "broadcast": 4 * full}
    if spec.name == "zero2":
        return {"all_gather": 4 * padded, "reduce_scatter": 4 * padded}
    if spec.name == "zero3":
        return {"all_gather": 8 * padded, "reduce_scatter": 4 * padded}
    if spec.name == "tensor":
        meta = model.build_meta()
        total = 0
        for path, style in model.tp_plan().items():
            lin = meta.get_submodule(path)
            if style == "rowwise":  # forward: the partial outputs are summed
                total += batch * tokens * lin.out_features * 4
            elif path != "pieces.0.fc":  # backward: input grads of colwise layers summed
                total += batch * tokens * lin.in_features * 4
        return {"all_reduce": total}
    if spec.name == "pipeline":
        width = model.config.embd if r["model"] == "gpt-tiny" else model.config.hidden
        act = batch * tokens * width * 4  # every boundary carries the whole batch once
        stages = n * spec.options.per_rank
        mine = [rank + k * n for k in range(spec.options.per_rank)]
        fwd = sum(1 for s in mine if s != stages - 1) * act
        bwd = sum(1 for s in mine if s != 0) * act
        return {"send": fwd + bwd, "recv": fwd + bwd}
    return None  # hybrid: checked for losses and memory only


def _sent(sched: Any) -> int:
    return 4 * sum(s.range.size for st in sched.steps for s in st.sends)


def _recv(sched: Any) -> int:
    return 4 * sum(rv.range.size for st in sched.steps for rv in st.recvs)


@pytest.mark.training
def test_comm_bytes_are_what_the_strategy_must_send(records: list[dict[str, Any]]) -> None:
    checked = 0
    for r in records:
        for rank in range(r["world_size"]):
            want = _expected_comm(r, rank)
            if want is None:
                continue
            got = {k: v for k, v in r["comm_by_type_by_rank"][rank].items() if v}
            want = {k: v for k, v in want.items() if v}
            assert got == want, (r["strategy"], r["model"], r["world_size"], rank)
            checked += 1
    assert checked > 100


@pytest.mark.training
def test_failed_case_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    # no world sizes in the file: validated at run time, where hybrid's 3-rank tensor groups
    # cannot tile 2 ranks; the job ends, the case is recorded failed, the next case runs.
    (tmp_path / "sc.yaml").write_text(
        "kind: training\nmodels: [mlp]\nstrategies: [hybrid:3, ddp]\nsteps: 1\nwarmup: 1\n"
        "backend: gloo\n")
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(tmp_path / "sc.yaml"),
                           "--out", str(tmp_path / "run"), "--world-sizes", "2", "--no-progress",
                           "--no-report"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "tensor_degree 3 does not divide the world size" in proc.stderr
    # each rank's one line and the launcher's, not torchrun's traceback and per-rank report
    assert "Traceback" not in proc.stderr and "ChildFailedError" not in proc.stderr, proc.stderr
    recs = load_results(tmp_path / "run").to_dict("records")
    assert [(r["strategy"], r["status"]) for r in recs] == [("hybrid[tp=3]", "failed"), ("ddp", "ok")]


@pytest.mark.parametrize(("body", "message"), [
    ("strategies: [tensor]\nworld_sizes: [8]", "tensor degree 8 does not divide the 4 attention heads"),
    ("strategies: [pipeline]\nworld_sizes: [16]", "16 pipeline stages exceed the model's 8 pieces"),
    ("strategies: [ddp:warp]", "unknown ddp hook 'warp'"),
    pytest.param("strategies: [ddp:bf16]\nworld_sizes: [2]", "hook bf16 needs CUDA and NCCL",
                 marks=pytest.mark.skipif(bf16_hook_allowed(), reason="DDP takes the bf16 hook here")),
    ("strategies: [fsdp9]", "unknown strategy 'fsdp9'"),
    ("strategies: [hybrid:3]\nworld_sizes: [4]", "tensor_degree 3 does not divide the world size"),
    ("strategies: [pipeline:gpipe]\nworld_sizes: [2]\nbatch_size: 6",
     "batch_size 6 is not a multiple of microbatches 4"),
])
def test_bad_training_scenarios_fail_at_load(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "sc.yaml"
    path.write_text(f"kind: training\nmodels: [gpt-tiny]\n{body}\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert message in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_training_scenario_through_the_cli(tmp_path: Path) -> None:
    """The same load-time errors reach the user as one line and exit 2. Validation imports no
    torch, so a CLI run costs only the CLI's own start-up (tests/training/test_training_rules.py checks
    that with the import list and a CPU bound)."""
    (tmp_path / "sc.yaml").write_text(
        "kind: training\nmodels: [gpt-tiny]\nstrategies: [tensor]\nworld_sizes: [8]\n")
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(tmp_path / "sc.yaml"),
                           "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "does not divide the 4 attention heads" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()
