"""Calibrate on few, predict many: a fabric refitted on busbw curves recovers the efficiencies
that made them, and ``calibrate --fabric`` does it from a run (an imported nccl-tests log)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from bench.cli import main
from bench.costmodel.fabric_fit import Point, fit_profile
from bench.costmodel.model import parse_topology
from bench.costmodel.profile import load_profile
from bench.costmodel.vendor.choose import choose
from bench.measure import metrics

DATA = Path(__file__).parents[1] / "data" / "import"


def test_fit_recovers_the_efficiencies_that_made_the_curves() -> None:
    base = load_profile("a100-ib200")  # no NVLS: ring and tree only
    assert base.fabric is not None
    truth = replace(base.fabric, ring_efficiency=0.7, nic_efficiency=0.6)
    pts = []
    for spec in ("1x8", "4x8"):
        pl = parse_topology(spec).place(parse_topology(spec).world)
        for nbytes in (1 << 28, 1 << 30, 1 << 32):
            c = choose(pl, truth, "all_reduce", nbytes)
            assert not isinstance(c, str)
            pts.append(Point(parse_topology(spec), "all_reduce", nbytes,
                             metrics.busbw_gbps("all_reduce", pl.world, nbytes, c.time_s)))
    got = fit_profile(base, pts)
    assert got.fabric is not None
    assert got.fabric.ring_efficiency == pytest.approx(0.7, abs=1e-4)
    assert got.fabric.nic_efficiency == pytest.approx(0.6, abs=1e-4)
    assert got.fabric_yaml["ring_efficiency"] == pytest.approx(0.7, abs=1e-4)


def test_calibrate_fabric_from_an_imported_nccl_tests_log(tmp_path: Path, capsys) -> None:
    run, out = tmp_path / "run", tmp_path / "fitted.yaml"
    assert main(["import", "nccl-tests", str(DATA / "all_reduce_perf.txt"), "--out",
                 str(run)]) == 0
    assert main(["calibrate", str(run), "--fabric", "--base", "h100-ib400", "-o",
                 str(out)]) == 0
    assert "calibrate: fabric fitted on 8 points" in capsys.readouterr().err
    prof = yaml.safe_load(out.read_text())
    assert set(prof["fitted"]["fabric"]) == {"ring_efficiency", "nic_efficiency"}
    assert load_profile(out).fabric is not None
    assert main(["calibrate", str(run), "--fabric", "-o", str(tmp_path / "x.yaml")]) == 2
    assert capsys.readouterr().err.strip() == (
        "commbench: calibrate: --fabric needs --base, a profile with a fabric (e.g. h100-ib400)")
