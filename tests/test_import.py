"""Importers: nccl-tests text and -J JSON, OSU with and without -f; garbage names its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import main
from bench.compare.gate import compare_runs
from bench.importers import Options, ParseError, nccl_tests, osu
from bench.records import load_results, read_meta

DATA = Path(__file__).parent / "data" / "import"


def imported(tmp_path: Path, tool: str, name: str, *extra: str) -> Path:
    out = tmp_path / name.replace(".", "_")
    assert main(["import", tool, str(DATA / name), "--out", str(out), *extra]) == 0
    return out


def test_nccl_tests_text_both_placements(tmp_path: Path) -> None:
    run = imported(tmp_path, "nccl-tests", "all_reduce_perf.txt")
    df = load_results(run)
    assert len(df) == 16 and set(df["algorithm"]) == {"native", "native_inplace"}
    assert set(df["world_size"]) == {8} and set(df["ranks_per_node"]) == {4}
    assert set(df["transport"]) == {"nccl"} and set(df["dtype"]) == {"float32"}
    big = df[(df["nbytes"] == 134217728) & (df["algorithm"] == "native")].iloc[0]
    assert big["time_us_median"] == pytest.approx(2785.4)
    assert big["busbw_gbps"] == pytest.approx(84.33, rel=2e-3)  # same definition as nccl-tests
    assert big["samples_us"] == [2785.4] and big["samples_are_summaries"]
    assert big["iters"] == 20 and big["warmup"] == 5 and big["wrong"] == 0
    meta = read_meta(run)
    assert meta["source"] == "nccl-tests" and meta["hosts"] == ["node01", "node02"]


def test_nccl_tests_old_text_without_root_column_and_na_wrong() -> None:
    res = nccl_tests.parse((DATA / "all_reduce_perf_old.txt").read_text(), Options())
    assert len(res.records) == 12
    first = res.records[0]
    assert first["world_size"] == 4 and first["wrong"] is None
    assert first["time_us_median"] == pytest.approx(12.51)


def test_nccl_tests_json(tmp_path: Path) -> None:
    run = imported(tmp_path, "nccl-tests", "all_reduce_perf.json")
    df = load_results(run)
    assert len(df) == 8 and set(df["world_size"]) == {2}
    row = df[(df["nbytes"] == 262144) & (df["algorithm"] == "native_inplace")].iloc[0]
    assert row["time_us_median"] == pytest.approx(19.70)
    assert read_meta(run)["nccl_tests"]["nccl_version"] == 22703


def test_osu_with_and_without_full_stats(tmp_path: Path) -> None:
    plain = load_results(imported(tmp_path, "osu", "osu_allreduce.txt", "--world-size", "4"))
    full = load_results(imported(tmp_path, "osu", "osu_allreduce_full.txt", "--world-size", "4"))
    assert len(plain) == 12 and len(full) == 8
    assert plain.iloc[-1]["time_us_median"] == pytest.approx(812.40)  # average (no -f)
    row = full[full["nbytes"] == 1048576].iloc[0]
    assert row["time_us_median"] == pytest.approx(878.90)  # max over ranks with -f
    assert row["iters"] == 100 and row["osu_avg_us"] == pytest.approx(860.33)
    assert "max over ranks" in row["timer"] and "Avg Latency" in plain.iloc[0]["timer"]
    assert set(full["transport"]) == {"mpi"} and set(full["algorithm"]) == {"native"}


def test_imported_runs_join_reports_and_comparisons(tmp_path: Path) -> None:
    a = imported(tmp_path, "osu", "osu_allreduce_full.txt", "--world-size", "4")
    res = compare_runs(a, a)
    assert res.exit_code == 0 and res.count("same") == 8
    out = tmp_path / "r.html"
    assert main(["report", str(a), "-o", str(out)]) == 0
    assert "imported from a tool that" in out.read_text()


@pytest.mark.parametrize(("parser", "text", "line", "words"), [
    (nccl_tests.parse, "#       size         count      type   redop    root     time   algbw   busbw "
     "#wrong     time   algbw   busbw #wrong\n#  Rank  0 Group  0 Pid 1 on h device 0 [0] G\n"
     "           8             2     float     sum      -1    31.20    0.00\n", 3, "expected 13"),
    (nccl_tests.parse, "hello world\n", 1, "not nccl-tests output"),
    (nccl_tests.parse, '{"config": {"devices": []},\n "results": [ }', 2, "not valid JSON"),
    (osu.parse, "# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)\n4   1.5\n"
     "8   fast\n", 4, "not a number"),
    (osu.parse, "4  1.5\n", 1, "not OSU output"),
])
def test_garbage_is_rejected_with_its_line_number(parser: object, text: str, line: int,
                                                  words: str) -> None:
    with pytest.raises(ParseError) as e:
        parser(text, Options(world_size=2))  # type: ignore[operator]
    assert e.value.line == line and words in str(e.value)


def test_import_command_errors_are_one_line_exit_2(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.log"
    bad.write_text("# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)\n1 2 3\n")
    assert main(["import", "osu", str(bad), "--world-size", "2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == f"commbench: import: {bad}:3: expected 2 columns, got 3: '1 2 3'\n"
    assert main(["import", "osu", str(DATA / "osu_allreduce.txt"), "--out", str(tmp_path / "p")]) == 2
    assert "pass --world-size" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and not (tmp_path / "p").exists()
