"""Compute as achieved: the efficiency curve's shape rules (computed), ``commbench gemm`` on this
machine's CPU (the model's exact GEMM shapes timed and recorded, every efficiency in (0, 1], the
profile written and read back by advise), and the pruned search's rows equal to the exhaustive
search's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device")

# gpt-tiny (6 blocks 32 wide, 4 heads, seq 16, vocab 64), micro-batch 1, as (m, n, k, batch): a
# block's q, k, v and proj (tokens x 32 x 32 at t = 1), fc and the MLP's proj, attention's score
# and context GEMMs per local head, then the LM head (unsharded: 64 x 32); the shapes new at t = 2
TINY_T1 = [(16, 32, 32, 1), (16, 128, 32, 1), (16, 32, 128, 1), (16, 16, 8, 4), (16, 8, 16, 4),
           (16, 64, 32, 1)]
TINY_T2 = [(16, 16, 32, 1), (16, 32, 16, 1), (16, 32, 64, 1), (16, 16, 8, 2), (16, 8, 16, 2)]


def test_smaller_shards_and_microbatches_run_less_efficiently() -> None:
    from bench.advise.achieved import Efficiency, Gemm
    from bench.costmodel.profile import load_profile

    dev = load_profile("h100-ib400").device
    eff = Efficiency(dev["flops_per_s"], dev["gemm_efficiency"], dev["gemm_latency_s"],
                     dev["memory_bandwidth_bytes_per_s"])
    h = 8192  # a 70B block's MLP GEMM, sharded over t, for micro-batches of 1 and 4 x 2048
    by_t = [eff.efficiency(Gemm(2048, 4 * h // t, h)) for t in (1, 2, 4, 8, 16, 32, 64)]
    assert by_t == sorted(by_t, reverse=True) and 0 < by_t[-1] < by_t[0] <= eff.gemm
    assert eff.efficiency(Gemm(4 * 2048, 4 * h // 8, h)) > by_t[3]
    big = Gemm(8192, 8192, 8192)  # compute-bound: the roofline's flat part, less t0
    assert math.isclose(eff.gemm_s(big.flops, big.nbytes("flash")),
                        big.flops / (eff.gemm * eff.peak) + eff.latency)


def test_gemm_command_times_the_models_shapes_and_advise_reads_the_profile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command in this interpreter (torch is already imported: the shapes time in ms)."""
    from bench.advise.achieved import Achieved
    from bench.advise.question import device_compute
    from bench.cli import main
    from bench.costmodel.profile import load_profile

    out = tmp_path / "cpu-gemm.yaml"
    assert main(["gemm", "--model", "gpt-tiny", "--tensor", "1,2,3", "--repeats", "2",
                 "--device", "cpu", "--output", str(out)]) == 0
    assert "tensor degrees 1,2," in capsys.readouterr().out  # 3 does not divide the 4 heads
    prof = load_profile(str(out))
    dev = prof.device
    points = dev["gemm_points"]
    assert [tuple(int(x) for x in p[:4]) for p in points] == TINY_T1 + TINY_T2
    assert all(p[4] > 0 for p in points)
    rates = [2.0 * m * n * k * b / s for m, n, k, b, s in points]
    assert all(0 < r / dev["flops_per_s"] <= 1 for r in rates)
    assert 0 < dev["gemm_efficiency"] <= 1 and dev["gemm_latency_s"] >= 0
    got = device_compute(prof)
    assert isinstance(got, Achieved) and got.eff.gemm == dev["gemm_efficiency"]
    assert got.eff.peak == dev["flops_per_s"] and got.eff.latency == dev["gemm_latency_s"]
    assert dev["memory_bytes"] == load_profile("cpu-25gbe").device["memory_bytes"]


@pytest.mark.parametrize("keep", [1, 4, 12])
def test_the_pruned_search_has_the_exhaustive_searchs_first_rows(keep: int) -> None:
    from bench.advise.question import Question
    from bench.advise.shape import shape_of
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.models import MODELS
    from bench.training.analytic import MIXED

    q = Question(shape_of(MODELS.get("gpt-small")), load_profile("h100-ib400"),
                 parse_topology("2x8"), 64, MIXED)
    full = q.answer(16)
    pruned = q.answer(16, keep=keep)
    assert pruned.pruned > 0 and len(pruned.results) + pruned.pruned == len(full.results)
    assert [(r.layout, r.step.time) for r in pruned.results] == \
        [(r.layout, r.step.time) for r in full.results[:keep]]


def test_a_pieces_kind_holds_its_own_local_parameters() -> None:
    """Pieces priced once per kind hold exactly their own tensor-parallel local parameters, for
    every catalog model: mlp's pieces alternate column- and row-wise sharding over equal shapes,
    and only the column-wise ones shard their bias."""
    from bench.advise.achieved import held_params
    from bench.advise.shape import local_params, shape_of
    from bench.models import CATALOG, MODELS

    for name in CATALOG:
        shape = shape_of(MODELS.get(name))
        for t in (1, 2, 4):
            for i in range(shape.model.num_pieces):
                one = frozenset((i,))
                want = sum(math.prod(p.shape) for p in local_params(shape, t, one))
                assert held_params(shape, t, one) == want, (name, t, i)
