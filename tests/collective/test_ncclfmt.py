"""``--format nccl-tests``: nccl-tests' table from records (the row and footer of its
src/util.cu, byte for byte on fixed records), read back by ``commbench import nccl-tests`` into
the same cases; and the done-when command of issue 43 run for real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.collective import ncclfmt
from bench.store.importers import nccl_tests  # noqa: F401 - registers the importer
from bench.store.records import iter_records
from tests.conftest import commbench


def rec(algorithm: str, nbytes: int, mean_us: float, wrong: int | None = 0,
        collective: str = "all_reduce") -> dict[str, object]:
    return {"collective": collective, "algorithm": algorithm, "world_size": 2, "nbytes": nbytes,
            "count": nbytes // 4, "dtype": "float32", "op": "sum", "root": None,
            "time_us_mean": mean_us, "wrong": wrong}


def test_a_row_holds_out_of_place_and_in_place_as_nccl_tests_prints_them() -> None:
    row = ncclfmt.row([rec("native", 1048576, 500.0), rec("native_inplace", 1048576, 400.0)])
    # algbw = 1048576 B / 500 µs = 2.097152 GB/s; busbw = algbw * 2(p-1)/p = algbw at p = 2
    assert row == ("     1048576        262144     float     sum      -1   500.00    2.10    2.10"
                   "       0   400.00    2.62    2.62       0")


def test_a_missing_side_is_na_and_wide_numbers_lose_decimals_as_in_get_float_str() -> None:
    row = ncclfmt.row([rec("native", 8, 123456.0, wrong=None, collective="alltoall")])
    assert row is not None
    assert row.split() == ["8", "2", "float", "none", "-1", "123456", "0.00", "0.00", "N/A",
                           "N/A", "N/A", "N/A", "N/A"]
    assert ncclfmt.row([rec("ring", 8, 1.0)]) is None


def test_footer_counts_wrong_elements_and_averages_busbw_over_both_sides() -> None:
    recs = [rec("native", 1000, 1.0, wrong=3), rec("native_inplace", 1000, 2.0)]
    assert ncclfmt.footer(recs).splitlines() == [
        "# Out of bounds values : 3 FAILED", "# Avg bus bandwidth    : 0.75 ", "#"]
    assert ncclfmt.footer(recs[1:]).splitlines()[0] == "# Out of bounds values : 0 OK"


def test_header_columns_line_up_with_the_rows() -> None:
    lines = ncclfmt.header().splitlines()
    row = ncclfmt.row([rec("native", 8, 1.0), rec("native_inplace", 8, 1.0)])
    assert row is not None
    names = lines[2].lstrip("#").split()
    assert names == ["size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                     "#wrong", "time", "algbw", "busbw", "#wrong"]
    # each column's name ends where its values end (right-aligned, as printf's %Ns)
    ends = [m.end() for m in re.finditer(r"\S+", lines[2])][1:]
    assert ends == [m.end() for m in re.finditer(r"\S+", row)]


@pytest.mark.mpi
def test_run_format_nccl_tests_prints_the_table_and_imports_back(tmp_path: Path) -> None:
    res = commbench("run", "-c", "all_reduce", "-b", "8", "-e", "1M", "-f", "2", "-n", "2",
                    "-a", "native,native_inplace", "--format", "nccl-tests", "-w", "1", "-i", "3",
                    "--out", str(tmp_path / "run"), "--no-report", timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    rows = [ln for ln in lines if ln and not ln.startswith("#") and ln.split()[0].isdigit()]
    assert [int(r.split()[0]) for r in rows] == [8 << i for i in range(18)]
    assert all(len(r.split()) == 13 and r.split()[4] == "-1" for r in rows)
    assert "# Out of bounds values : 0 OK" in lines
    assert sum(ln.startswith("# Avg bus bandwidth    : ") for ln in lines) == 1
    log = tmp_path / "all_reduce.log"
    log.write_text(res.stdout)
    back = commbench("import", "nccl-tests", str(log), "--out", str(tmp_path / "back"),
                     "--world-size", "2")
    assert back.returncode == 0, back.stderr
    got = sorted((r["algorithm"], r["nbytes"]) for r in iter_records(tmp_path / "back"))
    assert got == sorted((a, 8 << i) for a in ("native", "native_inplace") for i in range(18))
