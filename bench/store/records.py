"""Result records: versioned, append-only JSON Lines next to ``meta.json``, each fsynced as its
case ends, so a crash loses at most the case in flight (whose cut line the loader skips)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from bench.argtypes import CommbenchError

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
RESULTS = "results.jsonl"
META = "meta.json"

# Fields every collective record carries (the gate matches cases on KEY_FIELDS).
COLLECTIVE_FIELDS = (
    "schema_version", "kind", "status", "collective", "algorithm", "transport", "world_size",
    "ranks_per_node", "nbytes", "count", "dtype", "op", "iters", "time_us_median", "time_us_p5",
    "time_us_p95", "time_us_min", "algbw_gbps", "busbw_gbps", "wrong", "bytes_sent_max",
    "samples_us",
)
KEY_FIELDS = ("kind", "collective", "algorithm", "transport", "world_size", "ranks_per_node",
              "nbytes", "dtype", "op")


class StoreError(CommbenchError, ValueError):
    """A run directory that cannot be read (missing, wrong schema); one-line message."""


class ResultWriter:
    """Appends records to ``run_dir/results.jsonl``, synced record by record (``durable``) or once
    at close."""

    def __init__(self, run_dir: Path, durable: bool = True) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / RESULTS
        self._durable = durable
        self._f = self.path.open("a", encoding="utf-8")

    def write(self, *records: Mapping[str, Any]) -> None:
        """``records`` in one write: a case's records are on disk together or not at all."""
        self._f.write("".join(json.dumps(r, separators=(",", ":"), allow_nan=False) + "\n"
                              for r in records))
        if self._durable:
            self._f.flush()
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if not self._durable:
            self._f.flush()
            os.fsync(self._f.fileno())
        self._f.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_meta(run_dir: Path, meta: Mapping[str, Any]) -> None:
    """Write ``meta.json`` atomically (tmp file + rename), so readers never see half of it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / (META + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str), encoding="utf-8")
    os.replace(tmp, run_dir / META)


def read_meta(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / META
    if not path.is_file():
        raise StoreError(f"{run_dir}: no {META} (not a commbench run directory)")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise StoreError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise StoreError(
            f"{path}: schema_version {meta.get('schema_version')!r}, "
            f"this commbench reads {SCHEMA_VERSION}"
        )
    return meta


# Raw-sample arrays: most of a record's bytes, cut out before parsing by readers of summaries.
_SAMPLE_FIELDS = re.compile(
    rb',"(?:[A-Za-z_]*samples_(?:us|ms)|last_[a-z]+_ranks)":\[[^\[\]]*\]')
_SAMPLE_COLUMN = re.compile(r"^(?:[A-Za-z_]*samples_(?:us|ms)|last_[a-z]+_ranks)$")


BadLine = Callable[[Path, int, str], None]  # (results file, line number, why) of a skipped line
_ON_BAD: ContextVar[BadLine | None] = ContextVar("commbench_on_bad", default=None)


@contextlib.contextmanager
def skipping_bad_lines(on_bad: BadLine) -> Iterator[None]:
    """Within this block, readers skip bad lines of results.jsonl and tell ``on_bad``."""
    token = _ON_BAD.set(on_bad)
    try:
        yield
    finally:
        _ON_BAD.reset(token)


def iter_records(run_dir: Path | str, *, samples: bool = True,
                 on_bad: BadLine | None = None) -> Iterator[dict[str, Any]]:
    """Records in file order; a bad line but the last is a :class:`StoreError`, or with ``on_bad``
    (or inside :func:`skipping_bad_lines`) skipped and reported."""
    path = Path(run_dir) / RESULTS
    if not path.is_file():
        return
    on_bad = on_bad or _ON_BAD.get()
    lines = path.read_bytes().splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line if samples else _SAMPLE_FIELDS.sub(b"", line))
        except orjson.JSONDecodeError:
            if i == len(lines):
                return  # truncated by a crash mid-write
            if on_bad is None:
                raise StoreError(f"{path}:{i}: not a JSON record") from None
            on_bad(path, i, "not a JSON record")
            continue
        if not isinstance(rec, dict) or rec.get("schema_version") != SCHEMA_VERSION:
            got = rec.get("schema_version") if isinstance(rec, dict) else None
            why = f"schema_version {got!r}, this commbench reads {SCHEMA_VERSION}"
            if on_bad is None:
                raise StoreError(f"{path}:{i}: {why}")
            on_bad(path, i, why)
            continue
        yield rec


def heal(run_dir: Path) -> int:
    """Cut off a last line of results.jsonl cut short by a crash (a complete one gets its
    newline); the bytes dropped."""
    path = Path(run_dir) / RESULTS
    if not path.is_file():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    try:
        if isinstance(orjson.loads(tail), dict):
            with path.open("ab") as f:
                f.write(b"\n")
            return 0
    except orjson.JSONDecodeError:
        pass
    with path.open("r+b") as f:
        f.truncate(cut)
        os.fsync(f.fileno())
    return len(tail)


def load_results(run_dir: Path | str, *, samples: bool = True) -> pd.DataFrame:
    """All records of a run as a DataFrame (without the raw-sample arrays with ``samples=False``)."""
    import pandas as pd  # lazily: the CLI's start-up should not pay for pandas

    df = pd.DataFrame(list(iter_records(Path(run_dir), samples=samples)))
    if not samples:
        df = df.drop(columns=[c for c in df.columns if _SAMPLE_COLUMN.match(c)])
    return df
