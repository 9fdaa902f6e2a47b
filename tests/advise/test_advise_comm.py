"""The communication model against what training counts, exactly: every strategy of the
session's shared training run (tests/conftest.py: scenarios/training.yaml's strategies, every
ddp hook, DDP / zero1 with buckets small enough to split the model, ps:1) on gpt-tiny and mlp
at 4 ranks, and ps:1 and ps:2 at 3 ranks, run for real under torch's launcher.
Bytes on every rank and calls on rank 0 (what records carry) must equal
:mod:`bench.advise.comm`'s calls, counted as training counts them."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch", reason="training needs torch")


@pytest.fixture
def records(training_records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's shared training run (tests/conftest.py), every strategy it ran."""
    return training_records


def predicted(rec: dict[str, Any], rank: int, via_layout: bool) -> Any:
    from bench.advise.calls import counted
    from bench.advise.comm import CommContext, layout_calls
    from bench.advise.layout import as_layout
    from bench.advise.shape import shape_of
    from bench.models import MODELS
    from bench.training.scenario import StrategySpec
    from kernels.topology import Topology

    spec = StrategySpec.of_record(rec["strategy_options"])
    lay = as_layout(spec, rec["world_size"])
    tp, dp = rank % lay.tensor, (rank // lay.tensor) % lay.data
    pp = rank // (lay.tensor * lay.data)
    server = rank - lay.data if lay.servers and rank >= lay.data else None
    if server is not None:
        tp = dp = pp = 0
    ctx = CommContext(shape_of(MODELS.get(rec["model"])), lay, rec["batch_size_per_replica"],
                      pp=pp, server=server)
    calls = layout_calls(ctx) if via_layout else spec.strategy.calls(ctx)
    one_node = {g: Topology.blocks(n, n) for g, n in
                (("data", lay.data), ("tensor", lay.tensor), ("pipeline", lay.pipeline))}
    return counted(calls, {"data": dp, "tensor": tp, "pipeline": pp, "server": 0}, one_node)


@pytest.mark.training
@pytest.mark.timeout(600)
def test_every_strategy_sends_what_the_model_says(records: list[dict[str, Any]]) -> None:
    assert len(records) == 2 * 18 + 2 * 2 and all(r["status"] == "ok" for r in records)
    checked = 0
    for r in records:
        for rank in range(r["world_size"]):
            for via_layout in (False, True):  # the strategy's own model, and the layout's parts
                got = predicted(r, rank, via_layout)
                assert got.bytes == r["comm_by_type_by_rank"][rank], (r["strategy"], r["model"],
                                                                      r["world_size"], rank)
                if rank == 0:
                    assert got.calls == r["comm_calls_by_type"], (r["strategy"], r["model"])
            checked += 1
    assert checked == 2 * 18 * 4 + 2 * 2 * 3


@pytest.mark.training
def test_parameter_server_sends_its_shards(records: list[dict[str, Any]]) -> None:
    """ps:2 at 3 ranks on gpt-tiny: the worker pushes 4 Psi = 323584 bytes in 2 sends and pulls
    as many in 2 receives; the servers' shards (greedy, largest first) sum to it, each server
    receiving and sending its shard once (one worker)."""
    ps2 = [r for r in records if r["strategy"] == "ps[servers=2]" and r["model"] == "gpt-tiny"]
    assert len(ps2) == 1
    by_rank = ps2[0]["comm_by_type_by_rank"]
    assert by_rank[0] == {"send": 323584, "recv": 323584}
    assert ps2[0]["comm_calls_by_type"] == {"send": 2, "recv": 2}
    assert by_rank[1]["recv"] + by_rank[2]["recv"] == 323584
    assert by_rank[1] == predicted(ps2[0], 1, True).bytes


@pytest.mark.training
def test_small_buckets_split_ddp_into_several_all_reduces(records: list[dict[str, Any]]) -> None:
    """0.02 MiB buckets (cap int(0.02 * 2**20) = 20971 B) on gpt-tiny's 80896 fp32 gradients, in
    reverse parameter order: lm_head 2048 + ln_f 64 + mlp.proj 4128 = 6240 elements (24960 B)
    closes the first bucket; mlp.fc 4224 + ln2 64 + attn.proj 1056 = 5344 the second; and so on:
    13 buckets, 13 all_reduces."""
    from bench.advise.comm import CommContext
    from bench.advise.layout import Layout
    from bench.advise.shape import shape_of
    from bench.models import MODELS
    from bench.training.strategies.ddp import buckets

    sizes = buckets(CommContext(shape_of(MODELS.get("gpt-tiny")), Layout(data=2, bucket_mb=0.02), 8))
    assert sizes[:2] == [6240, 5344] and len(sizes) == 13 and sum(sizes) == 80896
    small = [r for r in records if r["strategy_options"].get("bucket_mb") == 0.02
             and r["model"] == "gpt-tiny"]
    assert len(small) == 1 and all(r["comm_calls_by_type"]["all_reduce"] == 13 for r in small)
