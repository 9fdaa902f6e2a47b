"""Backend and device choice for training: the one-line refusals (run everywhere) and, where torch
sees a GPU, the NCCL path itself: every strategy at one rank on CUDA, gloo ranks on a GPU host
(their models stay on CPU), and more ranks than GPUs refused in one line."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")

from bench.collective.scenario import ScenarioError, load_scenario  # noqa: E402
from bench.store.records import iter_records  # noqa: E402
from bench.training.distenv import fp32_math, pick_backend, visible_gpus  # noqa: E402
from bench.training.strategies.ddp import bf16_hook_allowed  # noqa: E402
from tests.conftest import ROOT, clean_env, commbench  # noqa: E402

GPUS = visible_gpus()
needs_gpu = pytest.mark.skipif(GPUS == 0, reason="needs a CUDA GPU")


@pytest.mark.parametrize(("backend", "ranks", "gpus", "want"), [
    ("gloo", 4, 0, "gloo"), ("gloo", 4, 1, "gloo"), ("auto", 4, 0, "gloo"),
    ("auto", 1, 1, "nccl"), ("auto", 8, 4, "gloo"), ("nccl", 1, 1, "nccl"), ("nccl", 8, 8, "nccl"),
])
def test_backend_for_ranks_and_gpus(backend: str, ranks: int, gpus: int, want: str) -> None:
    assert pick_backend(backend, ranks, gpus) == want


@pytest.mark.parametrize(("backend", "ranks", "gpus", "message"), [
    ("nccl", 1, 0, "backend nccl needs CUDA GPUs and torch sees none here"),
    ("nccl", 2, 1, "2 ranks on this host but 1 GPU(s): backend nccl needs a GPU per rank "
                   "(NCCL cannot put two ranks on one GPU); use world sizes <= 1, or backend: gloo"),
])
def test_backend_refusals_are_one_line(backend: str, ranks: int, gpus: int, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        pick_backend(backend, ranks, gpus)
    assert message in str(err.value) and "\n" not in str(err.value)


def _handle(path: Path, out: Path, sizes: tuple[int, ...]) -> int:
    """The training kind's entry, its bad input said as ``commbench run`` says it."""
    from bench.argtypes import CommbenchError
    from bench.cli import bad_input
    from bench.training.launch import run

    args = argparse.Namespace(scenario=path, out=out, no_progress=True)
    try:
        return run(args, load_scenario(path), sizes)
    except CommbenchError as e:
        return bad_input(e, "run")


@pytest.mark.skipif(GPUS > 0, reason="torch sees a GPU here")
def test_nccl_without_gpus_exits_2_before_launching(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "scenarios" / "training-gpu-1.yaml"
    assert _handle(path, tmp_path / "run", (1,)) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"commbench: {path}: backend nccl needs CUDA GPUs and torch sees none here "
                           f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}); "
                           "use backend: gloo or auto to run on CPU")
    assert not (tmp_path / "run").exists()


def test_gpu_smoke_scenario_runs_every_strategy_at_one_rank() -> None:
    sc = load_scenario(ROOT / "scenarios" / "training-gpu-1.yaml")
    assert sc.backend == "nccl" and sc.world_sizes == [1]
    assert [s for s, _ in sc.cases(1)] == sc.strategies  # nothing left out at one rank
    assert {s.name for s in sc.strategies} == {"ddp", "zero1", "zero2", "zero3", "tensor",
                                                "pipeline", "hybrid"}


def test_fp32_math_turns_tf32_off_consistently() -> None:
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        fp32_math()
        assert torch.backends.cudnn.allow_tf32 is False  # readable: no legacy/new API mix
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
        assert torch.backends.cudnn.conv.fp32_precision != "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


# ---- on GPUs --------------------------------------------------------------------------------

TOL = {"ddp[fp16]": 5e-3, "ddp[bf16]": 2e-2}  # fp32 elsewhere (TF32 off); GPU kernels differ
GPU_TOL = 1e-4  # from the reference only by reduction order (microbatches, split-K choices)


def _run(tmp_path: Path, body: str, timeout: float = 300) -> tuple[Any, list[dict[str, Any]]]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "sc.yaml").write_text(body)
    proc = commbench("run", str(tmp_path / "sc.yaml"), "--out", str(tmp_path / "run"),
                     "--no-progress", timeout=timeout)
    return proc, list(iter_records(tmp_path / "run"))


@needs_gpu
def test_every_strategy_on_one_gpu(tmp_path: Path) -> None:
    from bench.models import MODELS
    from bench.training.analytic import FP32, predict
    from bench.training.scenario import StrategySpec

    bf16 = ", ddp:bf16" if bf16_hook_allowed() else ""
    head = "kind: training\nworld_sizes: [1]\nsteps: 3\nwarmup: 2\nbackend: nccl\n"
    proc, recs = _run(tmp_path / "all", head + f"""models: [gpt-tiny, mlp]
strategies: [ddp, ddp:fp16{bf16}, ddp:ring, zero1, zero2, zero3, tensor, pipeline:gpipe,
             pipeline:1f1b, pipeline:interleaved, hybrid:1]
""")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(recs) == 2 * (11 + bool(bf16))
    # convolutions: cuDNN would use TF32 by default (loss off by ~1e-3); fp32_math turns it off
    conv_body = "models: [convnet]\nstrategies: [ddp, zero3, pipeline:1f1b]\n"
    proc, conv = _run(tmp_path / "conv", head + conv_body)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(conv) == 3
    for r in recs + conv:
        key = (r["strategy"], r["model"])
        assert r["status"] == "ok", (key, r.get("error"))
        assert (r["device"], r["backend"], r["tf32"]) == ("cuda", "nccl", False), key
        assert r["mem_peak_method"].startswith("CUDA") and r["mem_peak_bytes"] > 0, key
        assert r["loss_max_abs_diff"] <= TOL.get(r["strategy"], GPU_TOL), (key, r["loss"],
                                                                          r["loss_reference"])
        e = predict(MODELS.get(r["model"]), StrategySpec.model_validate(r["strategy_options"]), 1,
                    0, FP32)
        got = r["mem_params_bytes"], r["mem_grads_bytes"], r["mem_optim_bytes"]
        assert got == (e.params, e.grads, e.optim), key


@needs_gpu
def test_gloo_ranks_on_a_gpu_host_stay_on_cpu(tmp_path: Path) -> None:
    # fully_shard's default mesh is on torch's accelerator: these ranks must pass a CPU mesh
    bf16 = ", ddp:bf16" if bf16_hook_allowed() else ""  # gloo reduces bf16 on CPU
    proc, recs = _run(tmp_path, f"""kind: training
models: [gpt-tiny]
strategies: [ddp{bf16}, zero2, zero3, tensor, pipeline:1f1b, hybrid:2]
world_sizes: [2]
steps: 1
warmup: 2
backend: gloo
""")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(recs) == 6 + bool(bf16) and all(r["status"] == "ok" for r in recs), recs
    assert all((r["device"], r["backend"]) == ("cpu", "gloo") for r in recs)
    assert all(r["loss_max_abs_diff"] <= TOL.get(r["strategy"], 1e-5) for r in recs)


@needs_gpu
def test_more_ranks_than_gpus_is_refused_in_one_line(tmp_path: Path) -> None:
    n = GPUS + 1
    body = f"kind: training\nmodels: [gpt-tiny]\nstrategies: [ddp]\nworld_sizes: [{n}]\nbackend: nccl\n"
    proc, recs = _run(tmp_path, body, timeout=120)  # self-launched: refused before launching
    assert proc.returncode == 2 and not recs
    ours = [x for x in proc.stderr.splitlines() if x.startswith("commbench:")]
    assert len(ours) == 1 and "NCCL cannot put two ranks on one GPU" in ours[0], proc.stderr
    # under torchrun (the user's job) the ranks refuse before making a process group
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}",
           "-m", "bench", "run", str(tmp_path / "sc.yaml"), "--out", str(tmp_path / "job")]
    job = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean_env(), cwd=ROOT)
    assert job.returncode != 0
    assert f"{n} ranks on this host but {GPUS} GPU(s)" in job.stderr
