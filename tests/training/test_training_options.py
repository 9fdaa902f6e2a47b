"""The options of every strategy (activation checkpointing, autocast precision) and the
parameter-server strategy, trained for real on gpt-tiny: one self-launched run at 2 ranks and
one at 3 (ps with one and two servers), checked against the single-process reference within the
stated tolerances, the analytic memory model and the bytes each must send."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")

from bench.store.records import iter_records  # noqa: E402

COMMON = """
kind: training
models: [gpt-tiny]
batch_size: 8
steps: 1
warmup: 2
backend: gloo
case_timeout_s: 120
"""
AT_2 = """
world_sizes: [2]
strategies:
  - ddp
  - {name: ddp, checkpoint: true}
  - {name: ddp, precision: bf16}
  - {name: ddp, precision: fp16}
  - {name: tensor, checkpoint: [1, 2]}
  - {name: zero3, checkpoint: true}
  - {name: pipeline, schedule: 1f1b, checkpoint: 0.5, precision: bf16}
  - ps:1
"""
# loss deviation from the fp32 single-process reference over the 4 steps run here: fp32
# strategies as in test_training; autocast measured at <= 4.8e-4 (bf16) and <= 8.6e-5 (fp16,
# static loss scale 1024) on gpt-tiny, allowed with a 10x margin (docs/training.md)
TOL = {"fp32": 1e-5, "bf16": 5e-3, "fp16": 1e-3}
B, S, H = 8, 16, 32  # batch per replica, sequence, width of gpt-tiny


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory, training_records: list[dict[str, Any]]
            ) -> dict[tuple[str, int], dict[str, Any]]:
    """The options at 2 ranks, run here; ps at 3 ranks from the session's shared training run
    (tests/conftest.py: PS_SCENARIO, the same model, batch and steps as COMMON)."""
    d = tmp_path_factory.mktemp("options")
    (d / "at2.yaml").write_text(COMMON + AT_2)
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(d / "at2.yaml"), "--out",
                           str(d / "at2"), "--no-progress", "--no-report"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = {(r["strategy"], r["world_size"]): r for r in iter_records(d / "at2")}
    return out | {(r["strategy"], 3): r for r in training_records
                  if r["model"] == "gpt-tiny" and r["world_size"] == 3}


def _spec(rec: dict[str, Any]) -> Any:
    from bench.training.scenario import StrategySpec

    return StrategySpec.model_validate(rec["strategy_options"])


@pytest.mark.training
@pytest.mark.timeout(600)  # the fixture's two launches run inside the first test
def test_losses_within_the_stated_tolerance(records: dict[tuple[str, int], dict[str, Any]]) -> None:
    assert sorted(records) == sorted([
        ("ddp", 2), ("ddp[ckpt]", 2), ("ddp[amp=bf16]", 2), ("ddp[amp=fp16]", 2),
        ("tensor[ckpt=1+2]", 2), ("zero3[ckpt]", 2), ("pipeline[1f1b,m=4,ckpt=0.5,amp=bf16]", 2),
        ("ps[servers=1]", 2), ("ps[servers=1]", 3), ("ps[servers=2]", 3)])
    for (label, n), r in records.items():
        assert r["status"] == "ok", r
        prec = _spec(r).precision
        assert r["loss_max_abs_diff"] <= TOL[prec], (label, n, r["loss"], r["loss_reference"])
        if prec != "fp32":  # autocast really ran in low precision
            assert r["loss_max_abs_diff"] > 1e-6, label
    # recomputation is deterministic: checkpointing leaves the trajectory bit for bit unchanged
    assert records[("ddp[ckpt]", 2)]["loss"] == records[("ddp", 2)]["loss"]
    # ps trains on the workers' global batch: 8 samples per worker
    assert [records[k]["global_batch"] for k in (("ps[servers=1]", 2), ("ps[servers=1]", 3),
                                                 ("ps[servers=2]", 3))] == [8, 16, 8]


@pytest.mark.training
def test_held_bytes_equal_the_analytic_model(records: dict[tuple[str, int], dict[str, Any]]) -> None:
    from bench.models import MODELS
    from bench.training.analytic import FP32, parameters, predict

    model = MODELS.get("gpt-tiny")
    params = parameters(model)
    for (label, n), r in records.items():
        for rank in range(n):
            e = predict(model, _spec(r), n, rank, FP32, params=params)
            got = (r["mem_params_bytes_by_rank"][rank], r["mem_grads_bytes_by_rank"][rank],
                   r["mem_optim_bytes_by_rank"][rank])
            assert got == (e.params, e.grads, e.optim), (label, n, rank)
    # a ps worker holds no optimizer state; its servers hold all of it between them
    ps = records[("ps[servers=2]", 3)]
    assert ps["mem_optim_bytes_by_rank"][0] == 0
    assert sum(ps["mem_optim_bytes_by_rank"][1:]) == records[("ddp", 2)]["mem_optim_bytes"]


@pytest.mark.training
def test_checkpointing_and_autocast_cut_the_activations(
        records: dict[tuple[str, int], dict[str, Any]]) -> None:
    from bench.models import MODELS
    from bench.training.analytic import FP32, activations

    def acts(label: str) -> int:
        return records[(label, 2)]["mem_activations_bytes"]

    # full checkpointing keeps each piece's input (and the loss's saved logits): 4*s*b*h per
    # layer in fp32 at least, and an order of magnitude less than without
    assert 6 * 4 * S * B * H <= acts("ddp[ckpt]") <= acts("ddp") / 10
    assert acts("zero3[ckpt]") == acts("ddp[ckpt]")  # the same pieces, the same inputs
    assert acts("ddp[ckpt]") < acts("tensor[ckpt=1+2]") < acts("ddp")
    assert acts("ddp[amp=bf16]") < acts("ddp") and acts("ddp[amp=fp16]") == acts("ddp[amp=bf16]")
    # the analytic rule moves the same way (Korthikanti et al.: 2sbh per checkpointed layer)
    model = MODELS.get("gpt-tiny")
    a = {k: activations(model, _spec(records[(k, 2)]), 2, B, FP32)
         for k in ("ddp", "ddp[ckpt]", "ddp[amp=bf16]")}
    assert a["ddp[ckpt]"] == 6 * 4 * S * B * H + 4 * S * B * 64
    assert a["ddp[amp=bf16]"] * 2 - 4 * S * B * 64 == a["ddp"]
    assert a["ddp[ckpt]"] < a["ddp[amp=bf16]"] < a["ddp"]


@pytest.mark.training
def test_ps_pushes_gradients_and_pulls_parameters(
        records: dict[tuple[str, int], dict[str, Any]]) -> None:
    from bench.models import MODELS
    from bench.training.analytic import greedy_owners

    sizes = [p.numel() for p in MODELS.get("gpt-tiny").build_meta().parameters()]
    for label, n, servers in (("ps[servers=1]", 2, 1), ("ps[servers=1]", 3, 1),
                              ("ps[servers=2]", 3, 2)):
        r = records[(label, n)]
        workers = n - servers
        owners = greedy_owners(sizes, servers)
        shard = [4 * sum(x for x, o in zip(sizes, owners) if o == s) for s in range(servers)]
        assert sum(shard) == 4 * sum(sizes)
        for rank in range(n):
            got = r["comm_by_type_by_rank"][rank]
            if rank < workers:  # push Psi of gradients, pull Psi of parameters, one call per server
                assert got == {"send": 4 * sum(sizes), "recv": 4 * sum(sizes)}, (label, n, rank)
            else:
                mine = shard[rank - workers]
                assert got == {"send": workers * mine, "recv": workers * mine}, (label, n, rank)
        assert r["comm_calls_by_type"] == {"send": servers, "recv": servers}  # rank 0, a worker


@pytest.mark.training
def test_recomputation_repeats_the_forward_collectives(
        records: dict[tuple[str, int], dict[str, Any]]) -> None:
    from bench.models import MODELS

    plan = MODELS.get("gpt-tiny").tp_plan()
    rowwise = {int(p.split(".")[1]) for p, style in plan.items() if style == "rowwise"}
    assert rowwise == set(range(1, 7))
    ckpt = records[("tensor[ckpt=1+2]", 2)]
    # without checkpointing (tests/training/test_training.py) each layer all-reduces b*s*h fp32 six times:
    # the two rowwise outputs in forward, the four colwise input gradients (q, k, v, fc) in
    # backward. Pieces 1 and 2 recompute their forward up to the last tensor backward needs
    # (torch's early stop), so they repeat attention's rowwise all-reduce and not the MLP's
    # (its output is saved by nothing inside the piece)
    layer = B * S * H * 4
    assert ckpt["comm_by_type"] == {"all_reduce": 6 * 6 * layer + 2 * layer}
    assert ckpt["comm_calls_by_type"] == {"all_reduce": 6 * 6 + 2}
    # FSDP2 unshards for backward before the recomputation: no extra all-gather
    from bench.training.analytic import chunk_rows

    shapes = [tuple(p.shape) for p in MODELS.get("gpt-tiny").build_meta().parameters()]
    padded = sum(chunk_rows(s[0], 2, 0) * math.prod(s[1:]) for s in shapes) * 2
    assert records[("zero3[ckpt]", 2)]["comm_by_type"] == {"all_gather": 8 * padded,
                                                           "reduce_scatter": 4 * padded}
    # autocast leaves the residual stream in fp32 (the add is not autocast and promotes bf16 +
    # fp32 to fp32), so the pipeline boundary carries b*s*h*4 bytes as in fp32: one send each way
    pipe = records[("pipeline[1f1b,m=4,ckpt=0.5,amp=bf16]", 2)]
    assert pipe["comm_by_type_by_rank"] == [{"send": B * S * H * 4, "recv": B * S * H * 4}] * 2


def test_recompute_fraction_is_the_checkpointed_forward_flops() -> None:
    from bench.models import MODELS
    from bench.training.analytic import predict
    from bench.training.scenario import StrategySpec

    model = MODELS.get("gpt-tiny")
    block = 2 * S * 12 * H * H + 4 * S * S * H  # q, k, v, proj, fc, proj; attention scores
    total = 6 * block + 2 * S * H * 64  # the head; the embedding does no matmul
    for ckpt, want in ((False, 0.0), (True, 1.0), ([1, 2], 2 * block / total),
                       (0.5, 3 * block / total)):  # 0.5 of 8 pieces: embedding + 3 layers
        e = predict(model, StrategySpec(name="ddp", checkpoint=ckpt), 2, 0, batch=B)
        assert e.recompute_fraction == pytest.approx(want, rel=1e-12), ckpt


def test_ps_without_a_worker_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "sc.yaml").write_text(
        "kind: training\nmodels: [gpt-tiny]\nstrategies: [ps:2]\nworld_sizes: [2]\n")
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(tmp_path / "sc.yaml"),
                           "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"commbench: {tmp_path / 'sc.yaml'}: ps[servers=2] on gpt-tiny at world size 2: ps needs "
        "at least one worker: 2 server rank(s) of 2 leave none"], proc.stderr


def test_saved_activations_counts_what_backward_holds() -> None:
    """The activation measure on a graph small enough to count by hand: Linear saves its input
    (the weight is a parameter, left out), ReLU saves its output, which the second Linear saves
    again (one storage, counted once); checkpointing keeps only the input. Everything is
    released by backward."""
    from torch.utils.checkpoint import checkpoint

    from bench.training.memory import SavedActivations

    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
    x = torch.randn(4, 8)
    for run, held in ((net, 2 * 4 * 8 * 4),
                      (lambda t: checkpoint(net, t, use_reentrant=False), 4 * 8 * 4)):
        with SavedActivations() as saved:
            loss = run(x).sum()
            assert saved.live == held
            loss.backward()
        assert (saved.peak, saved.live) == (held, 0)
