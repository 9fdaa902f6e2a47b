"""The results store: durable lines, a loader that survives a crash mid-write, schema checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.store.records import (
    SCHEMA_VERSION,
    ResultWriter,
    StoreError,
    load_results,
    read_meta,
    write_meta,
)
from bench.units import format_size, parse_size, size_range


def _rec(i: int) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "kind": "collective", "nbytes": 8 << i}


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    with ResultWriter(tmp_path) as w:
        for i in range(3):
            w.write(_rec(i))
    with (tmp_path / "results.jsonl").open("a") as f:
        f.write('{"schema_version": 1, "kind": "coll')  # the crash
    df = load_results(tmp_path)
    assert list(df["nbytes"]) == [8, 16, 32]


def test_corrupt_line_in_the_middle_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text(
        json.dumps(_rec(0)) + "\nnot json\n" + json.dumps(_rec(1)) + "\n")
    with pytest.raises(StoreError, match=r"results.jsonl:2"):
        load_results(tmp_path)


def test_schema_mismatch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text(json.dumps({"schema_version": 99}) + "\n")
    with pytest.raises(StoreError, match="schema_version 99"):
        load_results(tmp_path)
    write_meta(tmp_path, {"schema_version": 99})
    with pytest.raises(StoreError, match="schema_version 99"):
        read_meta(tmp_path)


def test_missing_run_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a commbench run directory"):
        read_meta(tmp_path / "nope")


@pytest.mark.parametrize(("text", "n"), [("8B", 8), ("64KiB", 65536), ("1GiB", 1 << 30),
                                         ("4M", 4 << 20), ("1KB", 1000), ("1.5KiB", 1536),
                                         (256, 256), (" 2 MiB ", 2 << 20)])
def test_parse_size(text: str | int, n: int) -> None:
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["8X", "", "1.3B", "-4KiB", "KiB", 0, True])
def test_parse_size_rejects(bad: str | int) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_size_range_like_nccl_tests() -> None:
    assert size_range(8, 128, 2) == [8, 16, 32, 64, 128]
    assert size_range(8, 100, 4) == [8, 32]
    assert [format_size(n) for n in (8, 1024, 3 << 20, 1 << 30, 1536)] == [
        "8B", "1KiB", "3MiB", "1GiB", "1536B"]


def test_each_kind_has_one_constructor_that_the_store_reads_back(tmp_path: Path) -> None:
    from bench.store import kinds
    from bench.store.records import iter_records

    made = [
        kinds.collective(status="ok", collective="all_reduce", algorithm="ring", transport="mpi",
                         world_size=2, ranks_per_node=2, nbytes=8, count=2, dtype="float32",
                         op="sum", time_us_median=1.5),
        kinds.training(status="failed", strategy="ddp", model="mlp", world_size=2, error="x"),
        kinds.probe(src=0, dst=1, world_size=2, nbytes=8),
        kinds.advice(predicted=True, model="gpt-tiny", world_size=8, layout="d8"),
    ]
    with ResultWriter(tmp_path) as w:
        for rec in made:
            w.write(rec)
    write_meta(tmp_path, kinds.meta(run_id="r", source="commbench", scenario={"name": "s"},
                                    status="ok"))
    assert list(iter_records(tmp_path)) == made
    assert [r["kind"] for r in made] == ["collective", "training", "probe", "advice"]
    meta = read_meta(tmp_path)
    assert meta["run_id"] == "r" and meta["scenario"] == {"name": "s"} and meta["started"]
    with pytest.raises(TypeError):  # a key field left out is an error where the record is built
        kinds.collective(status="ok", collective="all_reduce")  # type: ignore[call-arg]
