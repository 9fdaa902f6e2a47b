"""Importers: nccl-tests text and -J JSON, OSU with and without -f; garbage names its line.

``CORPUS`` maps each real-format fixture under ``data/importers`` (one or more per trait of logs
as people paste them, named by trait) to what importing it must give.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.cli import main
from bench.gate.compare import compare_runs
from bench.store.importers import Options, ParseError, nccl_tests, osu
from bench.store.importers.lines import clean
from bench.store.records import load_results, read_meta

DATA = Path(__file__).parents[1] / "data" / "import"
CORPUS = Path(__file__).parents[1] / "data" / "importers"


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


@dataclass(frozen=True)
class Case:
    collectives: tuple[str, ...]  # one per test in the file, in order
    records: int
    sample: tuple[int, float]  # (nbytes, busbw GB/s) of the first test's out-of-place row
    args: tuple[str, ...] = ()
    skipped: int = 0


NCCL = {  # fixture -> expected; OSU's are run with --world-size 4
    "nccl_version_banner.txt": Case(("all_reduce",), 26, (134217728, 148.87)),
    "rccl_version_banner.txt": Case(("all_gather",), 20, (1073741824, 299.52)),
    "srun_label.txt": Case(("reduce_scatter",), 18, (67108864, 138.58), skipped=3),
    "mpirun_tag_output.txt": Case(("all_reduce",), 36, (1048576, 38.78), skipped=1),
    "markdown_fence.txt": Case(("alltoall",), 20, (268435456, 148.68), skipped=7),
    "indented.txt": Case(("broadcast",), 14, (16777216, 117.2)),
    "hash_eaten.txt": Case(("all_gather",), 16, (16777216, 116.56)),
    "elided_rows.txt": Case(("all_reduce",), 28, (1073741824, 151.5), skipped=3),
    "out_of_place_only.txt": Case(("sendrecv",), 10, (268435456, 146.84)),
    "old_root_no_redop.txt": Case(("broadcast",), 16, (16777216, 38.07)),
    "old_redop_root.txt": Case(("reduce",), 16, (16777216, 38.32)),
    "separator_lines.txt": Case(("all_reduce", "broadcast"), 32, (16777216, 131.85), skipped=3),
    "concatenated.txt": Case(("all_reduce", "all_gather", "reduce_scatter", "alltoall"), 48,
                             (33554432, 139.9)),
    "prompt_and_command.txt": Case(("all_gather",), 50, (134217728, 146.81), skipped=6),
    "filename_alltoall.txt": Case(("alltoall",), 14, (16777216, 112.27)),
    "no_hints.txt": Case(("all_gather",), 14, (16777216, 112.25), ("--collective", "allgather")),
    "ranks_elided.txt": Case(("all_gather",), 16, (67108864, 138.16), ("--world-size", "8"), 1),
    "wrong_rows.txt": Case(("all_reduce",), 18, (67108864, 145.13)),
    "duplicate_rows.txt": Case(("all_reduce",), 20, (16777216, 129.11)),
    "nccl_info_noise.txt": Case(("reduce",), 16, (16777216, 116.01), skipped=14),
    "crlf_ansi.txt": Case(("all_reduce",), 16, (16777216, 116.72)),
}
OSU = {
    "osu_nccl_title.txt": Case(("all_reduce",), 10, (1048576, 35.23)),
    "osu_ucc_trace.txt": Case(("all_gather",), 10, (4194304, 23.15), skipped=11),  # size x 4
    "osu_lmod_ucx_noise.txt": Case(("broadcast",), 10, (1048576, 11.61), skipped=6),
    "osu_title_without_hash.txt": Case(("reduce",), 9, (1048576, 8.24)),
    "osu_command_only.txt": Case(("reduce_scatter",), 9, (1048576, 4.93)),
    "osu_concatenated.txt": Case(("all_reduce", "all_gather", "broadcast", "alltoall"), 40,
                                 (1048576, 14.59)),
    "osu_validation.txt": Case(("all_reduce",), 10, (1048576, 14.75)),
    "osu_no_title.txt": Case(("all_reduce",), 10, (1048576, 14.67), ("--collective", "allreduce")),
    "osu_srun_label.txt": Case(("all_reduce",), 10, (1048576, 15.0)),
    "osu_mpirun_tag_output.txt": Case(("all_reduce",), 10, (1048576, 14.76)),
    "osu_markdown_fence.txt": Case(("all_reduce",), 10, (1048576, 14.71), skipped=3),
    "osu_duplicate_rows.txt": Case(("all_reduce",), 12, (1048576, 14.98)),
}
CASES = [("nccl-tests", n, c) for n, c in NCCL.items()] + [("osu", n, c) for n, c in OSU.items()]


def test_every_fixture_is_in_the_table() -> None:
    named = set(NCCL) | set(OSU) | {"osu_gather.txt", "README.md"}
    assert {p.name for p in CORPUS.iterdir()} == named


@pytest.mark.parametrize(("tool", "name", "case"), CASES, ids=[n for _, n, _ in CASES])
def test_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: str, name: str,
                case: Case) -> None:
    out = tmp_path / "run"
    args = [*case.args, *(("--world-size", "4") if tool == "osu" else ())]
    assert main(["import", tool, str(CORPUS / name), "--out", str(out), *args]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"# {case.records} records from")
    assert (f"skipped {case.skipped} lines" in err[-1]) == bool(case.skipped)
    df, meta = load_results(out), read_meta(out)
    assert len(df) == case.records and meta["skipped_lines"] == case.skipped
    tests = meta["nccl_tests" if tool == "nccl-tests" else "osu"]["tests"]
    assert tuple(t["collective"] for t in tests) == case.collectives
    assert list(dict.fromkeys(df["collective"])) == list(dict.fromkeys(case.collectives))
    nbytes, busbw = case.sample
    row = df[(df["collective"] == case.collectives[0]) & (df["nbytes"] == nbytes)
             & (df["algorithm"] == "native")].iloc[0]
    assert row["busbw_gbps"] == pytest.approx(busbw, abs=0.01 + busbw * 5e-4)
    if tool == "nccl-tests":
        assert row["busbw_log_gbps"] == busbw  # the log's own, as printed
        assert set(df["algorithm"]) <= {"native", "native_inplace"} and set(df["transport"]) == {"nccl"}


def imported_from(tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name.replace(".", "_")
    tool = "osu" if name.startswith("osu_") else "nccl-tests"
    assert main(["import", tool, str(CORPUS / name), "--out", str(out), *extra]) == 0
    return out


def test_version_banners_and_elisions_reach_meta() -> None:
    meta = nccl_tests.parse((CORPUS / "nccl_version_banner.txt").read_text(), Options()).meta
    assert meta["nccl_tests"]["nccl_version"] == "2.21.5+cuda12.4"
    meta = nccl_tests.parse((CORPUS / "rccl_version_banner.txt").read_text(), Options()).meta
    assert meta["nccl_tests"]["rccl_version"] == "2.20.5-HEAD:2ae9cd2"
    meta = nccl_tests.parse((CORPUS / "elided_rows.txt").read_text(), Options()).meta
    assert meta["elided_marks"] == 3 and meta["nccl_tests"]["tests"][0]["world_size"] == 16


def test_wrong_rows_are_not_ok_and_duplicates_warn(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    df = load_results(imported_from(tmp_path, "wrong_rows.txt"))
    bad = df[df["status"] == "wrong"]
    assert len(bad) == 6 and sorted(set(bad["wrong"])) == [3, 1024, 1048580]  # '1.04858e+06'
    assert set(df[df["status"] == "ok"]["wrong"]) == {0}
    capsys.readouterr()
    imported_from(tmp_path, "duplicate_rows.txt")
    warnings = [e for e in capsys.readouterr().err.splitlines() if "warning:" in e]
    assert len(warnings) == 1 and "4 duplicate nccl-tests rows" in warnings[0]
    osu_df = load_results(imported_from(tmp_path, "osu_validation.txt", "--world-size", "4"))
    assert list(osu_df["status"]).count("wrong") == 1


@pytest.mark.parametrize(("name", "extra", "line", "words"), [
    ("no_hints.txt", (), 10, "fit all_gather or alltoall); pass --collective NAME"),
    ("no_hints.txt", ("--collective", "all_reduce"), 12, "busbw 0.10 GB/s in the log"),
    ("ranks_elided.txt", (), 14, "for all_gather at 4 ranks"),
    ("osu_no_title.txt", ("--world-size", "4"), 1, "pass --collective NAME"),
    ("osu_gather.txt", ("--world-size", "4"), 2, "names 'Gather', not a collective"),
    ("osu_validation.txt", (), 0, "pass --world-size"),
    ("concatenated.txt", ("--collective", "bogus"), 0, "--collective 'bogus': unknown"),
])
def test_refusals_are_one_line_naming_file_and_line(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str], name: str,
                                                    extra: tuple[str, ...], line: int,
                                                    words: str) -> None:
    tool = "osu" if name.startswith("osu_") else "nccl-tests"
    out = tmp_path / "o"
    assert main(["import", tool, str(CORPUS / name), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and not out.exists()
    assert err.startswith(f"commbench: import: {CORPUS / name}{f':{line}' if line else ''}: ")


def test_launcher_prefixes_and_markdown_are_cleaned() -> None:
    assert clean("  3: #  Rank  0 Group") == "#  Rank  0 Group"
    assert clean("[1,0]<stdout>:        8   2  float") == "8   2  float"
    assert clean("> \x1b[32m# size  count\x1b[0m\r") == "# size  count"


def test_numbers_after_a_tables_summary_are_not_its_rows() -> None:
    text = (CORPUS / "wrong_rows.txt").read_text()
    res = nccl_tests.parse(text + "2 warnings generated.\n", Options())
    assert len(res.records) == 18 and res.skipped == 1


def test_json_collective_comes_from_the_file_and_its_busbw_is_checked() -> None:
    text = (DATA / "all_reduce_perf.json").read_text()
    gather = text.replace("all_reduce_perf", "all_gather_perf").replace("AllReduce", "AllGather")
    with pytest.raises(ParseError, match=r"results\[0\]: out_of_place busbw .* for all_gather at 2"):
        nccl_tests.parse(gather, Options())
    res = nccl_tests.parse(text, Options(filename="all_gather.json"))  # the file's own word wins
    assert {r["collective"] for r in res.records} == {"all_reduce"}
