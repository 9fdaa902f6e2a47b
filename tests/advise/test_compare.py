"""``advise --compare``: the user's layouts parsed, matched and priced beside the ranking, in
the printed table and in the run's records; the tie group and the band from band.yaml."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.advise.compare import label, matches, parse_compare
from bench.advise.layout import Layout
from tests.conftest import commbench


def test_parse_splits_layouts_on_a_repeated_key() -> None:
    got = parse_compare("tp=8,pp=8,dp=24,tp=4,pp=8,dp=48,recompute=selective")
    assert [dict(s) for s in got] == [{"tensor": 8, "pipeline": 8, "data": 24},
                                      {"tensor": 4, "pipeline": 8, "data": 48,
                                       "recompute": "selective"}]
    assert label(got[1]) == "tp=4,pp=8,dp=48,recompute=selective"
    assert dict(parse_compare("dp=16,strategy=zero3")[0]) == {"data": 16, "dp": "zero3"}


@pytest.mark.parametrize("bad", ["tp=8,xx=2", "tp=0", "tp", "recompute=some", "tp=8,,pp=2"])
def test_parse_refuses_bad_layouts(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_compare(bad)


def test_matches_named_fields_only() -> None:
    lay = Layout(data=24, tensor=8, pipeline=8, dp="ddp", microbatches=96, checkpoint=True)
    assert matches(parse_compare("tp=8,pp=8,dp=24")[0], lay)
    assert matches(parse_compare("tp=8,pp=8,dp=24,recompute=full,m=96,strategy=ddp")[0], lay)
    assert not matches(parse_compare("tp=8,pp=8,dp=24,recompute=none")[0], lay)
    assert not matches(parse_compare("tp=4,pp=8,dp=24")[0], lay)


def test_compare_printed_and_recorded(tmp_path: Path) -> None:
    proc = commbench("advise", "--model", "gpt-1.3b", "--profile", "h100-ib400", "--topology",
                     "2x8", "--batch", "64", "--out", str(tmp_path / "adv"), "--top", "3",
                     "--compare", "tp=2,pp=2,dp=4,tp=1,dp=16,strategy=zero3")
    assert proc.returncode == 0, proc.stderr
    from bench.advise.band import band
    from bench.store.records import iter_records

    recs = list(iter_records(tmp_path / "adv"))
    mine = [r for r in recs if r.get("compared")]
    assert [r["compared"] for r in mine] == ["tp=2,pp=2,dp=4", "tp=1,dp=16,strategy=zero3"]
    assert all(r["place"] == 0 for r in mine)
    assert (mine[0]["tensor"], mine[0]["pipeline"], mine[0]["data"]) == (2, 2, 4)
    assert mine[1]["zero"] == 3 and mine[1]["data"] == 16
    b = band()
    ranked = [r for r in recs if r["place"] > 0]
    best = ranked[0]["step_time_ms"]
    for r in recs:  # each step carries the band; the tie flag is the band's rule
        assert r["step_band"] == b.step and r["rank_band"] == b.rank
        assert r["step_time_ms_low"] == pytest.approx(r["step_time_ms"] * (1 - b.step))
        assert r["tied_with_best"] == (r["fits"] and r["step_time_ms"] <= best * (1 + b.rank))
    assert proc.stdout.count("# compared ") == 2 and "why " in proc.stdout
    assert "error band: a step ±" in proc.stdout


def test_compare_of_no_such_layout_is_one_line(tmp_path: Path) -> None:
    proc = commbench("advise", "--model", "gpt-1.3b", "--profile", "h100-ib400", "--topology",
                     "2x8", "--batch", "64", "--out", str(tmp_path / "adv"),
                     "--compare", "tp=4,pp=8,dp=2")
    assert proc.returncode == 2
    assert "--compare tp=4,pp=8,dp=2: no such layout at 16 ranks" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
