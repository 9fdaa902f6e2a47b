"""``commbench advise`` without training runs: memory composed from the analytic model, the
overlap and bubble rules, the ZeRO paper's figures, the search, and bad input (one line, exit 2).
The communication model is checked against real training runs in tests/advise/test_advise_comm.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="advise builds models on the meta device")

from tests.conftest import commbench


def _shape(name: str) -> object:
    from bench.advise.shape import shape_of
    from bench.models import MODELS

    return shape_of(MODELS.get(name))


@pytest.mark.parametrize("strategy", ["ddp", "zero1", "zero2", "zero3", "tensor",
                                      "pipeline:1f1b", "pipeline:gpipe", "hybrid:2"])
@pytest.mark.parametrize("world", [2, 4])
def test_layout_memory_equals_the_analytic_model(strategy: str, world: int) -> None:
    """A training strategy as a layout has the analytic model's memory, activations included
    (the advice generalises the activation formula to tensor x pipeline), rank by rank; beside
    a pipeline, advise also counts the stage outputs torch's pipelining keeps (analytic does
    not): one per stage forward in flight, but on the last stage."""
    from bench.advise.layout import as_layout
    from bench.advise.memory import layout_memory, stage_activations, stage_output_bytes
    from bench.training.analytic import MIXED, predict
    from bench.training.analytic import activations as analytic_acts
    from bench.training.scenario import StrategySpec, _from_string
    from bench.training.stages import in_flight

    shape = _shape("gpt-small")
    spec = StrategySpec.model_validate(_from_string(strategy))
    lay = as_layout(spec, world)
    ranks = range(world) if spec.name == "pipeline" else [0]
    want = max((predict(shape.model, spec, world, r, MIXED, batch=8) for r in ranks),
               key=lambda e: e.total)
    got = layout_memory(shape, lay, 8, MIXED).per_rank
    assert (got.params, got.grads, got.optim, got.transient) == \
        (want.params, want.grads, want.optim, want.transient)
    for r in ranks:
        out = 0 if r == lay.pipeline - 1 else in_flight(
            lay.schedule, lay.pipeline, lay.microbatches, 1, r) * stage_output_bytes(
            shape, lay, 8 // lay.microbatches, MIXED)
        assert stage_activations(shape, lay, 8, MIXED, r) == out + analytic_acts(
            shape.model, spec, world, 8, MIXED, rank=r)


def test_overlap_rule_and_bounds() -> None:
    """Backward 2/3 of 30 ms = 20 ms hides 3 buckets of 8 ms but one (the last): exposed
    8 + max(0, 16 - 20) = 8 ms; a tensor all_reduce (2 x 1 ms) is exposed in full."""
    from bench.advise.calls import Call
    from bench.advise.step import Priced, step_time

    priced = [Priced(Call("all_reduce", 100, 3, "data", "backward", True), 8e-3, "ring", "ring"),
              Priced(Call("all_reduce", 10, 2, "tensor", "forward", False), 1e-3, "ring", "ring")]
    st = step_time(priced, 30e-3, 1, 1, 1)
    assert math.isclose(st.exposed["all_reduce:data"], 8e-3)
    assert math.isclose(st.exposed["all_reduce:tensor"], 2e-3)
    assert math.isclose(st.time, 40e-3)
    assert math.isclose(st.no_overlap, 30e-3 + 24e-3 + 2e-3)
    assert math.isclose(st.full_overlap, 30e-3 + 2e-3)  # 24 ms hidden under 30 ms of compute
    cpu = step_time(priced, 30e-3, 1, 1, 1, overlap=False)  # one core computes and sends
    assert math.isclose(cpu.time, cpu.no_overlap) and math.isclose(cpu.exposed["all_reduce:data"],
                                                                   24e-3)
    assert (cpu.no_overlap, cpu.full_overlap) == (st.no_overlap, st.full_overlap)


def test_measured_compute_keeps_the_fixed_part_whole() -> None:
    """A tensor-parallel rank computes half the FLOPs, but the wrapper's cost measured at one
    rank (10 ms of a 30 ms step, over plain ddp's 20 ms) is paid whole: 20 / 2 + 10 = 20 ms."""
    from bench.advise.comm import Bytes, CommContext
    from bench.advise.compute import Measured
    from bench.advise.layout import Layout
    from bench.advise.shape import shape_of
    from bench.models import MODELS

    ctx = CommContext(shape_of(MODELS.get("mlp")), Layout(tensor=2), 8, Bytes(4, 4, 4))
    assert math.isclose(Measured(30e-3, "t", fixed_s=10e-3).seconds(ctx), 20e-3)
    assert math.isclose(Measured(30e-3, "t").seconds(ctx), 15e-3)


@pytest.mark.parametrize(("p", "m", "v", "fraction"), [(4, 8, 1, 3 / 11), (4, 8, 2, 3 / 19),
                                                      (8, 8, 1, 7 / 15)])
def test_pipeline_bubble(p: int, m: int, v: int, fraction: float) -> None:
    """(p - 1) / (m + p - 1) for GPipe and 1F1B, (p - 1) / (v m + p - 1) interleaved."""
    from bench.advise.step import step_time

    st = step_time([], 1.0, m, p, v)
    assert math.isclose(st.bubble / (st.compute + st.bubble), fraction)


@pytest.mark.slow  # make test only: the paper's whole figure
def test_zero_paper_figure_1(tmp_path: Path) -> None:
    """7.5B parameters, 64 ranks, K = 12: 120, 31.4, 16.6 and 1.9 GB, the paper's formulas."""
    psi, n, k = 7.5e9, 64, 12
    want = [(2 + 2 + k) * psi, 2 * psi + 2 * psi + k * psi / n, 2 * psi + (2 + k) * psi / n,
            (2 + 2 + k) * psi / n]
    proc = commbench("memory", "--params", "7.5B", "--world-sizes", "64", "--units", "GB")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    row = lines[lines.index(next(x for x in lines if "P_os+g+p" in x)) + 1].split()
    got = [float(x) for x in row[1:]]
    assert row[0] == "64" and got == [round(w / 1e9, 2) for w in want] == [120.0, 31.41, 16.64,
                                                                           1.88]
    gib = commbench("memory", "--params", "7.5B", "--world-sizes", "64", "--units", "GiB")
    assert gib.stdout.splitlines()[-1].split()[1:] == ["111.76", "29.25", "15.50", "1.75"]


def test_search_ranks_fitting_layouts_first_and_states_the_margin(tmp_path: Path) -> None:
    proc = commbench("advise", "--model", "gpt-1.3b", "--profile", "h100-ib400", "--topology",
                     "2x8", "--batch", "64", "--out", str(tmp_path / "adv"), "--top", "3", "--all")
    assert proc.returncode == 0, proc.stderr
    from bench.store.records import iter_records

    recs = list(iter_records(tmp_path / "adv"))
    fits = [r["fits"] for r in recs]
    assert fits == sorted(fits, reverse=True) and fits[0]
    steps = [r["step_time_ms"] for r in recs if r["fits"]]
    assert steps == sorted(steps)
    assert math.isclose(recs[0]["margin_over_runner_up"], steps[1] / steps[0] - 1)
    for r in recs:
        eps = 1e-9 * r["step_time_ms"]  # the same sums in another order
        assert r["step_time_ms_full_overlap"] - eps <= r["step_time_ms"] \
            <= r["step_time_ms_no_overlap"] + eps
        assert r["data"] * r["tensor"] * r["pipeline"] + r["servers"] == 16
        assert 16 % r["tensor"] == 0 and (r["servers"] == 0 or r["tensor"] == r["pipeline"] == 1)
    labels = {r["layout"] for r in recs}  # the knobs are options of the search
    assert "dp=8 ps[servers=8]" in labels and "dp=16 zero3[ckpt]" in labels
    assert "# best at 16 ranks:" in proc.stdout and "faster than the runner-up" in proc.stdout
    rep = commbench("report", str(tmp_path / "adv"), "-o", str(tmp_path / "r.html"))
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "r.html").read_text()
    sec = html[html.index('<section id="strategy">'):]
    assert "Which strategy" in sec and "<svg" in sec and recs[0]["layout"] in sec


@pytest.mark.parametrize(("args", "message"), [
    (["--params", "70B", "--layers", "80", "--hidden", "8192", "--heads", "64",
      "--world-sizes", "8", "--topology", "1x8"],
     "fits no layout at 8 ranks within device.memory_bytes (80 GiB) per rank: the smallest world "
     "size that fits is 16"),  # dp=1 [ckpt] pp=16, micro-batches of one sample: 16 B x
    # 65.27e9 params / 16 = 60.8 GiB of states, 69.3 GiB in all (zero3[ckpt] needs 32 ranks)
    (["--model", "gpt-tiny", "--world-sizes", "3", "--batch", "1", "--topology", "1x4"],
     "no layout of gpt-tiny runs on 3 ranks with a global batch of 1"),
    (["--model", "gpt-tiny", "--topology", "1x2", "--profile", "NOFLOPS"],
     "device.flops_per_s is missing"),
    (["--params", "7B", "--layers", "32", "--hidden", "4096", "--heads", "30", "--topology", "1x2"],
     "embd 4096 is not a multiple of heads 30"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    prof = tmp_path / "noflops.yaml"
    prof.write_text("links: {intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 1.0e10}}\n"
                    "device: {memory_bytes: 8.0e10}\n")
    args = [str(prof) if a == "NOFLOPS" else a for a in args]
    if "--profile" not in args:
        args += ["--profile", "h100-ib400"]
    proc = commbench("advise", *args, "--out", str(tmp_path / "adv"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_knobs_change_compute_and_memory_not_communication() -> None:
    """Full recomputation: one more forward of the transformer layers (not of the embedding,
    the head or the loss: less than compute / 3), a layer keeps its input only
    (2 s b h at 16 bit); autocast bf16 halves an fp32 question's layer activations; the calls
    priced are the same. ps: the worker's push and pull; activations as analytic's rule."""
    from bench.advise.evaluate import Job, evaluate
    from bench.advise.layout import Layout
    from bench.advise.memory import activations
    from bench.advise.question import Question
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import FP32
    from bench.training.analytic import activations as analytic_acts
    from bench.training.scenario import StrategySpec

    shape = _shape("gpt-small")
    q = Question(shape, load_profile("h100-ib400"), parse_topology("1x8"), 64, FP32)
    job: Job = q.jobs()(8)
    plain, ckpt, amp = (evaluate(job, Layout(data=8, dp="zero3", **kw)) for kw in
                        ({}, {"checkpoint": True}, {"amp": "bf16"}))
    from bench.advise.achieved import piece_forward_s, stage_s

    layers = frozenset(range(1, shape.model.config.layers + 1))
    again = stage_s(piece_forward_s, job.compute.eff, job.shape, 1, layers, 8)
    assert math.isclose(ckpt.step.compute, plain.step.compute + again)
    assert again < plain.step.compute / 3
    assert ckpt.step.comm == plain.step.comm and amp.step.comm == plain.step.comm
    for kw, spec in (({"checkpoint": True}, {"checkpoint": True}),
                     ({"amp": "bf16"}, {"precision": "bf16"})):
        got = activations(shape, Layout(data=8, dp="zero3", **kw), 8, FP32)
        assert got == analytic_acts(shape.model, StrategySpec(name="zero3", **spec), 8, 8, FP32)
    ps = evaluate(job, Layout(data=6, dp="ps", servers=2))
    assert set(ps.step.comm) == {"send:server", "recv:server"} and ps.step.bubble == 0
    assert ps.memory.per_rank.activations == analytic_acts(
        shape.model, StrategySpec(name="ps", servers=2), 8, 8, FP32)


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(0, 1 << 20), max_size=40), n=st.integers(1, 64))
def test_greedy_owners_is_largest_first_to_the_least_loaded_lowest_bin(sizes: list[int], n: int
                                                                        ) -> None:
    """The heap-based assignment equals its definition, one scan per parameter (what
    ZeroRedundancyOptimizer does), on any sizes and bin counts."""
    from bench.training.analytic import greedy_owners

    loads, want = [0] * n, [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        want[i] = loads.index(min(loads))
        loads[want[i]] += sizes[i]
    assert greedy_owners(sizes, n) == want
