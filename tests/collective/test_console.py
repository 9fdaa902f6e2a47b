"""What a job prints (bench/collective/console.py): one table per job with one line per case in
commbench's format, one table per collective with one row per size and its footer in
nccl-tests', and the late ranks of the whole job in one line (margins under the threshold left
out); the late-rank summary the report's table is made of (bench/collective/lateness.py)."""

from __future__ import annotations

import io

from bench.collective.console import Console
from bench.measure import lateness


def rec(collective: str, algorithm: str, nbytes: int, late_us: float = 0.0) -> dict[str, object]:
    late = [{"at": "arrival", "rank": 1, "host": "h", "share": 0.9, "margin_us": late_us}]
    return {"collective": collective, "algorithm": algorithm, "world_size": 2, "nbytes": nbytes,
            "count": nbytes // 4, "dtype": "float32", "op": "sum", "root": None,
            "time_us_median": 10.0, "time_us_p95": 12.0, "time_us_mean": 11.0,
            "algbw_gbps": 0.1, "busbw_gbps": 0.1, "wrong": 0, "status": "ok", "iters": 20,
            "late": late if late_us else []}


def job(fmt: str) -> list[str]:
    out = io.StringIO()
    con = Console(out, fmt)
    for coll in ("all_reduce", "all_gather"):
        for n in (8, 64, 512):
            con.head((coll, 2, 2, "mpi"), oversubscribed=False)
            con.case([rec(coll, "native", n, late_us=50.0 if n == 8 else 5.0),
                      rec(coll, "native_inplace", n)])
    con.close()
    return out.getvalue().splitlines()


def test_commbench_format_is_one_table_per_job_one_line_per_case_one_late_line() -> None:
    lines = job("commbench")
    rows = [ln for ln in lines if not ln.startswith("#")]
    assert len(rows) == 12  # 2 collectives x 3 sizes x 2 algorithms
    assert len(lines) == 12 + 4 + 1  # the table's 4 header lines, the late-rank line
    assert [ln.split()[0] for ln in rows] == ["all_reduce"] * 6 + ["all_gather"] * 6
    assert lines[-1] == ("# note: late ranks (by >= 10 µs): rank 1 on h arrived last in 2 of 12 "
                         "cases (median 50 µs, at most 50 µs) (report: Late ranks)")


def test_nccl_tests_format_is_one_table_per_collective_with_its_footer() -> None:
    lines = job("nccl-tests")
    rows = [ln for ln in lines if not ln.startswith("#")]
    assert [int(r.split()[0]) for r in rows] == [8, 64, 512] * 2
    assert sum(ln.startswith("# Out of bounds values : 0 OK") for ln in lines) == 2
    assert sum(ln.startswith("# Avg bus bandwidth    : ") for ln in lines) == 2


def test_late_summary_folds_cases_and_drops_small_margins() -> None:
    recs = [rec("all_reduce", "ring", 8 << i, late_us=us) for i, us in enumerate((5, 20, 40, 9.99))]
    got = lateness.summarize(recs)
    assert got == [{"who": "rank 1 on h", "at": "arrived", "cases": 2, "of": 4,
                    "median_us": 30.0, "max_us": 40.0, "worst": "all_reduce ring 32 B p=2"}]
    assert lateness.summarize(recs, min_us=50) == []
    assert lateness.line([]) is None
