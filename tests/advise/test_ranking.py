"""Rank statistics and tie groups on synthetic rankings (bench/advise/ranking.py), and the
ranking sweeps' YAML: every row loaded with its source and priced."""

from __future__ import annotations

import pytest

from bench.advise.ranking import margin, percentile, spearman, tied_ranks, tied_with_best


def test_tied_ranks_within_noise() -> None:
    # 100 and 100.5 within 1 %: one tie (ranks 1, 2 -> 1.5); 120 alone; 141.9 and 141.2 tied
    assert tied_ranks([100.0, 120.0, 100.5], 0.01) == [1.5, 3.0, 1.5]
    assert tied_ranks([141.9, 141.2, 155.7], 0.01) == [1.5, 1.5, 3.0]
    assert tied_ranks([3.0, 1.0, 2.0]) == [3.0, 1.0, 2.0]
    # a run is measured from its first member: 100, 100.9 tie; 101.8 is over 1 % of 100
    assert tied_ranks([100.0, 100.9, 101.8], 0.01) == [1.5, 1.5, 3.0]


def test_spearman_exact() -> None:
    assert spearman([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert spearman([1.5, 1.5], [1, 2]) is None  # no spread in one ranking
    assert spearman([1], [1]) is None


def test_tie_group_and_margin_synthetic() -> None:
    steps = [10.0, 10.4, 10.8, 12.0]  # best first
    assert tied_with_best(steps, 0.05) == 2  # 10.4 <= 10.5; 10.8 > 10.5
    assert tied_with_best(steps, 0.08) == 3
    assert tied_with_best(steps, 0.0) == 1
    assert tied_with_best([], 0.1) == 0
    assert margin(steps) == pytest.approx(0.04)
    assert margin([1.0]) is None


def test_percentile_interpolates() -> None:
    assert percentile([0.1, 0.2, 0.3, 0.4, 0.5], 0.8) == pytest.approx(0.42)
    assert percentile([0.3], 0.8) == 0.3


def test_sweeps_loaded_and_priced() -> None:
    from benchmarks.advise_ranking import price, sweeps

    loaded = sweeps()
    assert {s.role for s in loaded} == {"fit", "check"}
    rows = [(s, r) for s in loaded for r in s.rows]
    assert len(rows) == 30 and all(r.source for _, r in rows)
    assert all(r.gpus == r.tp * r.pp * r.data for _, r in rows)
    s, r = next((s, r) for s, r in rows if s.name.startswith("BLOOM-176B 288") and r.pp == 72)
    res = price(s, r)
    assert (res.layout.data, res.layout.tensor, res.layout.pipeline) == (4, 1, 72)
    assert res.layout.microbatches == 512 and res.layout.dp == "zero1" and res.layout.checkpoint
    assert res.step.time > 0
