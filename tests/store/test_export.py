"""Export: pytest-benchmark JSON that pytest-benchmark itself reads, CSV and Parquet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.cli import main
from bench.store.records import load_results
from tests.helpers import synthetic

SPEC = synthetic.Spec(world_sizes=(2,), sizes=(1024, 65536), algorithms=("native", "ring"),
                      samples=20)


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    recs = [*synthetic.collective_records(SPEC),
            synthetic.failed_record("tree", 2, 64, "timeout"),
            *synthetic.training_records(strategies=("data",), models=("mlp",), world_sizes=(2,))]
    return synthetic.write_run(tmp_path / "run", recs)


def export(run: Path, fmt: str, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["export", str(run), "--format", fmt, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    return out


def test_pytest_benchmark_json_is_read_by_pytest_benchmark_compare(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = export(run, "pytest-benchmark", tmp_path / "a.json", capsys)
    doc = json.loads(a.read_text())
    assert len(doc["benchmarks"]) == 4 + 1  # ok collectives + one training case, not the failed
    ring = next(b for b in doc["benchmarks"] if "algorithm=ring" in b["name"]
                and "nbytes=65536" in b["name"])
    rec = load_results(run).query("algorithm == 'ring' and nbytes == 65536").iloc[0]
    assert ring["stats"]["median"] == pytest.approx(rec["time_us_median"] / 1e6, rel=1e-6)
    assert ring["stats"]["rounds"] == 20
    b = export(run, "pytest-benchmark", tmp_path / "b.json", capsys)
    proc = subprocess.run([sys.executable, "-c", "from pytest_benchmark.cli import main; main()",
                           "compare", str(a), str(b), "--group-by=group", "--columns=min,median"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "algorithm=ring" in proc.stdout and "nbytes=65536" in proc.stdout
    assert "all_reduce p=2" in proc.stdout


def test_csv_has_every_record_and_decodable_samples(run: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    df = pd.read_csv(export(run, "csv", tmp_path / "r.csv", capsys))
    assert len(df) == 4 + 1 + 1
    ok = df[df["status"] == "ok"].dropna(subset=["samples_us"])
    assert all(len(json.loads(s)) == 20 for s in ok["samples_us"])
    assert set(df["status"]) == {"ok", "failed"}


def test_parquet_roundtrip(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow is the [parquet]/[test] extra")
    df = pd.read_parquet(export(run, "parquet", tmp_path / "r.parquet", capsys))
    assert len(df) == 6
    ring = df[(df["algorithm"] == "ring") & (df["nbytes"] == 1024)].iloc[0]
    assert len(ring["samples_us"]) == 20


def test_export_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path / "nope"), "--format", "csv"]) == 2
    assert "no such run directory" in capsys.readouterr().err
    empty = synthetic.write_run(tmp_path / "empty", [])
    assert main(["export", str(empty), "--format", "pytest-benchmark"]) == 2
    assert "no successful records" in capsys.readouterr().err


def test_output_into_a_new_directory_or_an_unwritable_one(run: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = export(run, "csv", tmp_path / "new" / "dir" / "run.csv", capsys)  # made, as report -o
    assert len(pd.read_csv(out)) == 2 * 2 + 1 + 1
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["export", str(run), "--format", "csv", "-o", str(blocker / "run.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("commbench: export: ")
