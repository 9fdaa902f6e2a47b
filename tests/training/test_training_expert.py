"""Expert parallelism trained for real on moe-tiny (4 experts, top-2, capacity 1.0: the drop
path runs) at 4 ranks, EP = 2 (x DP 2) and EP = 4, in one self-launched job: losses against the
single process, held bytes against the analytic model, and every rank's all_to_all and
all_reduce bytes (and rank 0's calls) against advise's count for the same layout, fed with the
routing the run recorded."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")

from bench.store.records import iter_records  # noqa: E402

SCENARIO = """
name: expert-test
kind: training
models: [moe-tiny]
strategies: [expert:2, expert:4]
world_sizes: [4]
batch_size: 4
steps: 1
warmup: 1
backend: gloo
case_timeout_s: 120
"""
B = 4  # batch per replica


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from tests.conftest import ROOT, clean_env

    d = tmp_path_factory.mktemp("expert")
    (d / "ep.yaml").write_text(SCENARIO)
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(d / "ep.yaml"), "--out",
                           str(d / "run"), "--no-progress", "--no-report"], capture_output=True,
                          text=True, timeout=600, env=clean_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {r["strategy"]: r for r in iter_records(d / "run")}


def _spec(rec: dict[str, Any]) -> Any:
    from bench.training.scenario import StrategySpec

    return StrategySpec.of_record(rec["strategy_options"])


@pytest.mark.training
@pytest.mark.timeout(600)  # the fixture's launch runs inside the first test
def test_losses_equal_the_single_process(records: dict[str, dict[str, Any]]) -> None:
    assert sorted(records) == ["expert[ep=2]", "expert[ep=4]"]
    for r in records.values():
        assert r["status"] == "ok", r
        assert r["global_batch"] == 4 * B and len(r["loss"]) == 3
        assert r["loss_max_abs_diff"] <= 1e-5, (r["strategy"], r["loss"], r["loss_reference"])


@pytest.mark.training
def test_held_bytes_equal_the_analytic_model(records: dict[str, dict[str, Any]]) -> None:
    """Expert slices 1/EP of the 3 x 4 x 16 x 32 stacked weights of each of 2 layers, the rest
    replicated."""
    from bench.models import MODELS
    from bench.training.analytic import FP32, predict

    model = MODELS.get("moe-tiny")
    for r in records.values():
        for rank in range(4):
            e = predict(model, _spec(r), 4, rank, FP32)
            got = (r["mem_params_bytes_by_rank"][rank], r["mem_grads_bytes_by_rank"][rank],
                   r["mem_optim_bytes_by_rank"][rank])
            assert got == (e.params, e.grads, e.optim), (r["strategy"], rank)
    ep = {k: r["mem_params_bytes_by_rank"][0] for k, r in records.items()}
    experts = 2 * 3 * 4 * 16 * 32  # elements: 2 layers of 3 stacks of 4 experts
    assert ep["expert[ep=2]"] - ep["expert[ep=4]"] == (experts // 2 - experts // 4) * 4


@pytest.mark.training
def test_router_load_and_drops_are_recorded(records: dict[str, dict[str, Any]]) -> None:
    """Per step: max/mean assignments per expert >= 1 and the dropped fraction; the counted
    step's kept assignments per (layer, rank, expert) hold the same fraction, each at most the
    capacity (4 per sequence) x the rank's 4 sequences."""
    for r in records.values():
        assert len(r["moe_imbalance"]) == len(r["moe_dropped_fraction"]) == 3
        assert all(x >= 1 for x in r["moe_imbalance"])
        kept = r["moe_dispatch_by_layer"]
        assert [len(layer) for layer in kept] == [4, 4] and all(
            len(row) == 4 and max(row) <= 4 * B for layer in kept for row in layer)
        routed = 2 * 4 * B * 8 * 2  # layers x ranks x samples x seq x top_k
        total = sum(sum(row) for layer in kept for row in layer)
        assert total < routed and abs(1 - total / routed - r["moe_dropped_fraction"][-1]) < 1e-6
    # the same data, seed and model: the same routing whatever the expert degree
    a, b = records.values()
    assert a["moe_dispatch_by_layer"] == b["moe_dispatch_by_layer"]


@pytest.mark.training
def test_all_to_all_bytes_equal_advise_count(records: dict[str, dict[str, Any]]) -> None:
    """Every rank's bytes by type, and rank 0's calls, are advise's count for the layout with
    the rank's recorded routing (:meth:`Routing.of_counts`): the strategy's own calls and the
    layout's parts alike."""
    import dataclasses

    from bench.advise.calls import counted
    from bench.advise.comm import CommContext, layout_calls
    from bench.advise.layout import as_layout
    from bench.advise.routing import Routing
    from bench.advise.shape import shape_of
    from bench.models import MODELS
    from bench.training.strategies.expert import expert_calls

    model = MODELS.get("moe-tiny")
    cfg = model.config
    for r in records.values():
        lay = as_layout(_spec(r), 4)
        for rank in range(4):
            routing = Routing.of_counts(r["moe_dispatch_by_layer"], rank, lay.expert,
                                        B * cfg.seq_len * cfg.top_k)
            shape = dataclasses.replace(shape_of(model), routing=routing)
            ctx = CommContext(shape, lay, B)
            for calls in (expert_calls(ctx), layout_calls(ctx)):
                got = counted(calls, {}, {})
                assert got.bytes == r["comm_by_type_by_rank"][rank], (r["strategy"], rank)
                if rank == 0:
                    assert got.calls == r["comm_calls_by_type"], r["strategy"]
    # per MoE layer 5 all_to_alls (counts, dispatch, combine, both mirrored); DDP's one bucket
    # and, with replicas (EP 2 of 4 ranks), the 3 expert slices of each layer
    assert records["expert[ep=2]"]["comm_calls_by_type"] == {"all_to_all": 10, "all_reduce": 7}
    assert records["expert[ep=4]"]["comm_calls_by_type"] == {"all_to_all": 10, "all_reduce": 1}
