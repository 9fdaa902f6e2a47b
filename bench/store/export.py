"""Export a run's records as pytest-benchmark JSON, CSV or Parquet (a registry of writers).
docs/results.md, "Export"."""

from __future__ import annotations

import datetime as dt
import json
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.argtypes import CommbenchError
from bench.store.records import iter_records, load_results, read_meta
from kernels.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

# Key fields that name a case, in order; training records use strategy and model.
NAME_FIELDS = ("collective", "algorithm", "strategy", "model", "transport", "src", "dst",
               "world_size", "ranks_per_node", "nbytes", "dtype", "op", "phase", "check", "role")
SAMPLES = {"collective": ("samples_us", 1e-6), "training": ("samples_ms", 1e-3),
           "probe": ("latency_samples_us", 1e-6)}  # a probe pair: its one-way latency


class ExportError(CommbenchError, ValueError):
    """Nothing sensible to write (no records, a missing optional library); one line."""


@dataclass(frozen=True)
class Format:
    name: str
    suffix: str
    write: Callable[[Path, Path], int]  # (run_dir, out) -> records written


FORMATS: Registry[Format] = Registry("export format")


def fmt(name: str, suffix: str) -> Callable[[Callable[[Path, Path], int]],
                                            Callable[[Path, Path], int]]:
    def deco(fn: Callable[[Path, Path], int]) -> Callable[[Path, Path], int]:
        FORMATS.add(name, Format(name, suffix, fn))
        return fn

    return deco


def case_name(rec: Mapping[str, Any]) -> str:
    parts = [f"{f}={rec[f]}" for f in NAME_FIELDS if rec.get(f) is not None]
    return "commbench[" + ",".join(parts) + "]"


def group(rec: Mapping[str, Any]) -> str:
    """The pytest-benchmark group: the collective (or model, or probe link class) and world size."""
    p = rec.get("world_size")
    if rec.get("kind") == "probe":
        phase = " confirm" if rec.get("phase") == "confirm" else ""
        return f"probe{phase} {rec.get('link_class')} p={p}"
    return f"{rec.get('collective') or rec.get('model')} p={p}"


def stats(seconds: np.ndarray) -> dict[str, Any]:
    """pytest-benchmark's ``stats`` block from raw durations in seconds."""
    s = np.sort(seconds)
    mean = float(s.mean())
    std = float(s.std(ddof=1)) if s.size > 1 else 0.0
    q1, q3 = (float(x) for x in np.percentile(s, [25, 75]))
    iqr = q3 - q1
    lo, hi = s[s >= q1 - 1.5 * iqr], s[s <= q3 + 1.5 * iqr]
    iqr_out = int(((s < q1 - 1.5 * iqr) | (s > q3 + 1.5 * iqr)).sum())
    std_out = int(((s < mean - std) | (s > mean + std)).sum())
    return {"min": float(s[0]), "max": float(s[-1]), "mean": mean, "stddev": std,
            "rounds": int(s.size), "median": float(np.median(s)), "iqr": iqr, "q1": q1, "q3": q3,
            "iqr_outliers": iqr_out, "stddev_outliers": std_out,
            "outliers": f"{std_out};{iqr_out}", "ld15iqr": float(lo[0]), "hd15iqr": float(hi[-1]),
            "ops": 1.0 / mean if mean > 0 else 0.0, "total": float(s.sum()), "iterations": 1}


@fmt("pytest-benchmark", ".json")
def write_pytest_benchmark(run_dir: Path, out: Path) -> int:
    meta = read_meta(run_dir)
    benches = []
    for rec in iter_records(run_dir):
        col, scale = SAMPLES.get(str(rec.get("kind", "collective")), SAMPLES["collective"])
        samples = np.asarray(rec.get(col) or [], dtype=float)
        if rec.get("status", "ok") != "ok" or samples.size == 0:
            continue
        name = case_name(rec)
        benches.append({
            "group": group(rec),
            "name": name, "fullname": f"commbench/{meta.get('run_id', run_dir.name)}::{name}",
            "params": None, "param": None,
            "extra_info": {k: rec.get(k) for k in ("busbw_gbps", "algbw_gbps", "bytes_sent_max",
                                                   "wrong", "samples_are_summaries")
                           if rec.get(k) is not None},
            "options": {"disable_gc": False, "timer": str(rec.get("timer", "commbench")),
                        "min_rounds": 1, "max_time": 0.0, "min_time": 0.0, "precision": None,
                        "confidence": None, "warmup": bool(rec.get("warmup"))},
            "stats": stats(samples * scale)})
    if not benches:
        raise ExportError(f"{run_dir}: no successful records with samples to export")
    host = meta.get("host") if isinstance(meta.get("host"), dict) else {}
    commit = str(meta.get("commit") or "")
    doc = {
        "machine_info": {"node": host.get("hostname", platform.node()),
                         "processor": host.get("cpu", ""), "machine": platform.machine(),
                         "python_implementation": platform.python_implementation(),
                         "python_version": host.get("python", platform.python_version()),
                         "system": platform.system(), "release": platform.release(),
                         "cpu": {"brand_raw": host.get("cpu", ""),
                                 "count": host.get("cores_logical")}},
        "commit_info": {"id": commit.removesuffix("-dirty"), "dirty": commit.endswith("-dirty"),
                        "project": "commbench", "branch": None, "time": meta.get("started")},
        "benchmarks": benches,
        "datetime": str(meta.get("started") or dt.datetime.now(dt.timezone.utc).isoformat()),
        "version": "5.1.0",
    }
    out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return len(benches)


def _frame(run_dir: Path) -> pd.DataFrame:  # pandas is imported by the records it loads
    df = load_results(run_dir)
    if df.empty:
        raise ExportError(f"{run_dir}: no records to export")
    return df


def _json_cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if isinstance(value, np.ndarray):
        return json.dumps(value.tolist())
    return value


@fmt("csv", ".csv")
def write_csv(run_dir: Path, out: Path) -> int:
    df = _frame(run_dir)
    for col in df.columns:  # nested values as JSON, not as Python's repr
        if df[col].dtype == object:
            df[col] = [_json_cell(v) for v in df[col]]
    df.to_csv(out, index=False)
    return len(df)


@fmt("parquet", ".parquet")
def write_parquet(run_dir: Path, out: Path) -> int:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ExportError("parquet needs pyarrow: pip install 'commbench[parquet]'") from None
    df = _frame(run_dir)
    for col in df.columns:  # a column mixing types (str and int, dicts) is no Arrow type: JSON it
        if df[col].dtype == object and not col.startswith("samples_"):
            kinds = {type(v) for v in df[col] if v is not None and v == v}
            if len(kinds) > 1 or kinds & {dict, list}:
                df[col] = [None if v is None else json.dumps(v) for v in df[col]]
    df.to_parquet(out, index=False)
    return len(df)


def export(run_dir: Path, name: str, out: Path | None = None) -> tuple[Path, int]:
    """Write ``run_dir`` as format ``name``; returns the file and the number of rows/cases."""
    f = FORMATS.get(name)
    out = out or Path(run_dir) / f"export{f.suffix}"
    out.parent.mkdir(parents=True, exist_ok=True)  # as the report does for -o
    return out, f.write(Path(run_dir), out)
