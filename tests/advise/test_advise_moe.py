"""Mixture-of-experts shapes in advise: the routing statistics the all-to-alls are priced with
(the skewed closed form, a recorded step's exact fractions), the expert degrees the search
offers, and an expert-parallel layout priced at its busiest rank. The same calls against what
training counts: tests/training/test_training_expert.py."""

from __future__ import annotations

import argparse
import dataclasses
from fractions import Fraction

import pytest

pytest.importorskip("torch", reason="advise builds models on the meta device (torch)")

from bench.advise.routing import Routing


def test_skewed_routing_is_one_hot_expert_clipped_at_capacity() -> None:
    """8 experts, imbalance 2, capacity 1.5: the hot expert's overflow (0.5 of a mean) is
    dropped at the sources (1 - 0.5/8 sent); the rank holding it alone receives 1.5 means, one
    holding it beside 3 others (each (8 - 2)/7) receives (1.5 + 3 * 6/7) / 4 = 57/56."""
    skew = Routing(imbalance=2.0)
    assert skew.fractions(0, 8, 8, 1.5) == (Fraction(15, 16), Fraction(3, 2))
    assert skew.fractions(5, 8, 2, 1.5) == (Fraction(15, 16), Fraction(57, 56))
    assert Routing().fractions(0, 8, 4, 1.25) == (1, 1)  # uniform: everything kept, evenly
    assert Routing(imbalance=1.25).fractions(0, 8, 8, 1.5) == (1, Fraction(5, 4))
    with pytest.raises(ValueError, match="imbalance"):
        Routing(imbalance=0.5)


def test_measured_routing_is_the_ranks_exact_share() -> None:
    """kept[layer][rank][expert] at 4 ranks, EP 2: rank 1 (group {0, 1}) holds experts 2 and 3
    and receives them from ranks 0 and 1; rank 2 (group {2, 3}) holds experts 0 and 1."""
    kept = [[[1, 2, 3, 4], [5, 6, 7, 0], [1, 1, 1, 1], [0, 0, 2, 2]]]
    r1 = Routing.of_counts(kept, 1, 2, 16)
    assert r1.fractions(0, 4, 2, 1.0) == (Fraction(18, 16), Fraction(3 + 4 + 7 + 0, 16))
    r2 = Routing.of_counts(kept, 2, 2, 16)
    assert r2.measured == ((Fraction(4, 16), Fraction(1 + 1 + 0 + 0, 16)),)


def test_a_record_is_priced_with_its_median_imbalance() -> None:
    from bench.advise.routing import of_record

    assert of_record({"moe_imbalance": [1.5, 1.2, 1.4]}) == Routing(imbalance=1.4)
    assert of_record({"strategy": "ddp"}) == Routing()


def test_search_offers_expert_degrees_for_moe_shapes_only() -> None:
    from bench.advise.search import plain_layouts
    from bench.models.catalog import CATALOG

    moe = {lay.expert for lay, _ in plain_layouts(CATALOG.get("moe-small"), 8, 64)
           if lay.dp == "expert"}
    assert moe == {2, 4, 8}  # every degree > 1 dividing both 8 ranks and 8 experts
    assert not [lay for lay, _ in plain_layouts(CATALOG.get("gpt-small"), 8, 64)
                if lay.dp == "expert"]


def test_expert_layout_is_priced_at_its_busiest_rank() -> None:
    """moe-small (8 experts, top-2, capacity 1.25, width 128, 64 tokens) at EP 8 with 8 samples
    per rank: 1024 assignments a layer; imbalance 2 clips at 1.25, so every data all_to_all is
    priced at 1280 rows x 128 x 4 B, the counts at 8 x 8 B; memory is the strategy's own."""
    from bench.advise.comm import CommContext
    from bench.advise.evaluate import evaluate
    from bench.advise.layout import Layout
    from bench.advise.question import Question
    from bench.advise.shape import shape_of
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.models import MODELS
    from bench.training.analytic import FP32, predict
    from bench.training.scenario import StrategySpec
    from bench.training.strategies.expert import expert_calls

    plain = shape_of(MODELS.get("moe-small"))
    skewed = dataclasses.replace(plain, routing=Routing(imbalance=2.0))
    lay = Layout(data=8, dp="expert", expert=8)
    sizes = {c.nbytes for c in expert_calls(CommContext(skewed, lay, 8), priced=True)
             if c.op == "all_to_all"}
    assert sizes == {64, 1280 * 128 * 4}
    results = []
    for shape in (plain, skewed):
        job = Question(shape, load_profile("h100-ib400"), parse_topology("1x8"), 64,
                       FP32).jobs()(8)
        results.append(evaluate(job, lay))
    uniform, hot = results
    # EP = the data degree: each expert slice has no replica to sum its gradient with
    assert set(hot.step.comm) == {"all_to_all:expert", "all_reduce:data"}
    assert hot.step.comm["all_to_all:expert"] > uniform.step.comm["all_to_all:expert"]
    want = predict(plain.model, StrategySpec(name="expert", degree=8), 8, 0, FP32)
    assert hot.memory.per_rank.model_states == want.model_states


def test_moe_flags_are_checked() -> None:
    from bench.advise.cli import custom_model, routed
    from bench.advise.question import AdviceError
    from bench.advise.shape import shape_of
    from bench.models import MODELS

    args = argparse.Namespace(layers=2, hidden=64, heads=4, vocab=512, seq=None, experts=8,
                              top_k=2, ffn=None, capacity_factor=1.25, imbalance=1.3)
    with pytest.raises(AdviceError, match="--ffn"):
        custom_model(args)
    model = custom_model(argparse.Namespace(**{**vars(args), "ffn": 128}))
    assert model.name == "moe-L2-h64-e8k2" and routed(shape_of(model), args).routing.imbalance == 1.3
    with pytest.raises(AdviceError, match="no experts"):
        routed(shape_of(MODELS.get("gpt-tiny")), args)
    with pytest.raises(AdviceError, match="top_k"):
        custom_model(argparse.Namespace(**{**vars(args), "ffn": 128, "top_k": 9}))
