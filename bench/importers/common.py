"""Record construction and run-directory writing shared by the importers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import metrics
from bench.importers import Imported
from bench.records import SCHEMA_VERSION, ResultWriter, write_meta

# Tool dtype names -> commbench's (numpy) names.
DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
          "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32",
          "int64": "int64", "uint64": "uint64", "int": "int32", "char": "int8",
          "mpi_float": "float32", "mpi_double": "float64", "mpi_int": "int32",
          "mpi_char": "int8", "f8e4m3": "float8_e4m3", "f8e5m2": "float8_e5m2"}


def record(*, source: str, collective: str, algorithm: str, transport: str, world_size: int,
           ranks_per_node: int | None, nbytes: int, count: int, dtype: str, op: str,
           time_us: float, summary_of: str, iters: int | None = None, warmup: int | None = None,
           wrong: int | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A collective record in the harness's schema from one summary time (µs)."""
    t = time_us / 1e6
    factor_known = collective in metrics.BUSBW_FACTOR
    rpn = ranks_per_node or world_size
    return {
        "schema_version": SCHEMA_VERSION, "kind": "collective", "status": "ok",
        "collective": collective, "algorithm": algorithm, "transport": transport,
        "world_size": world_size, "ranks_per_node": rpn, "nodes": max(1, world_size // rpn),
        "nbytes": nbytes, "count": count, "dtype": dtype, "op": op, "iters": iters,
        "warmup": warmup, "repetitions": 1, "time_us_median": time_us, "time_us_mean": time_us,
        "time_us_min": None, "time_us_p5": None, "time_us_p95": None, "time_us_max": None,
        "algbw_gbps": metrics.algbw_gbps(nbytes, t),
        "busbw_gbps": metrics.busbw_gbps(collective, world_size, nbytes, t) if factor_known
        else None,
        "wrong": wrong, "bytes_sent_max": None, "bytes_sent_inter_max": None, "steps": None,
        "timer": f"{source}: {summary_of}",
        "samples_us": [time_us], "samples_are_summaries": True, "source": source,
        "oversubscribed": False, **(extra or {}),
    }


def write_import(out: Path, source: str, input_path: Path, imported: Imported) -> int:
    """Write ``out/meta.json`` and ``out/results.jsonl``; returns the number of records."""
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    meta = {"schema_version": SCHEMA_VERSION, "run_id": out.name, "source": source,
            "source_file": str(input_path), "imported": now, "started": now, "finished": now,
            "status": "ok", "launcher": f"imported from {source} output",
            "scenario": {"name": f"{source} import of {input_path.name}",
                         "description": f"results of {source} read from {input_path}"},
            **imported.meta}
    write_meta(out, meta)
    with ResultWriter(out) as w:
        for rec in imported.records:
            w.write({**rec, "run_id": out.name, "scenario": meta["scenario"]["name"]})
    return len(imported.records)
