"""Record construction, number reading and run-directory writing shared by the importers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from bench.measure import metrics
from bench.store import kinds
from bench.store.importers import Imported, ParseError
from bench.store.records import ResultWriter, write_meta
from kernels.collective import resolve

# Tool dtype names -> commbench's (numpy) names.
DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
          "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32",
          "int64": "int64", "uint64": "uint64", "int": "int32", "char": "int8",
          "float32": "float32", "float16": "float16", "float64": "float64",
          "mpi_float": "float32", "mpi_double": "float64", "mpi_int": "int32",
          "mpi_char": "int8", "f8e4m3": "float8_e4m3", "f8e5m2": "float8_e5m2",
          "ncclfloat": "float32", "ncclfloat32": "float32", "nccldouble": "float64",
          "ncclhalf": "float16", "ncclint": "int32", "ncclchar": "int8", "ncclbfloat16": "bfloat16"}
WORD_BYTES = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2, "int8": 1, "uint8": 1,
              "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float8_e4m3": 1, "float8_e5m2": 1}
MAX_DIGITS = 30  # longer numbers are not a tool's output (and would make int() slow or fail)


def dtype_of(name: str) -> str:
    key = name.strip().rstrip(".").lower()
    return DTYPES.get(key, key)


def integer(tok: str, line: int, what: str) -> int:
    if len(tok) > MAX_DIGITS or not tok.lstrip("-").isascii() or not tok.lstrip("-").isdigit():
        raise ParseError(line, f"{what}: not an integer: {tok[:40]!r}")
    return int(tok)


def number(tok: str, line: int, what: str) -> float:
    """A finite float, or a ParseError naming the line."""
    try:
        x = float(tok) if len(tok) <= MAX_DIGITS + 10 else math.nan
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise ParseError(line, f"{what}: not a number: {tok[:40]!r}")
    return x


def half_ulp(tok: str) -> float:
    """Half a unit in the last printed digit of ``tok`` (``12.51`` -> 0.005, ``2e-07`` -> 5e-08)."""
    try:
        exp = Decimal(tok).as_tuple().exponent
    except (InvalidOperation, ValueError):
        return 0.0
    return 0.5 * 10.0 ** max(-30, min(30, exp)) if isinstance(exp, int) else 0.0


def busbw_mismatch(collective: str, world: int, nbytes: int, time_tok: str, busbw_tok: str,
                   rel: float = 1e-6) -> float | None:
    """The busbw computed from the printed time when the printed busbw cannot be its rounding;
    None when they agree."""
    t, logged = float(time_tok), float(busbw_tok)
    dt_, db = half_ulp(time_tok) + t * rel, half_ulp(busbw_tok) + abs(logged) * rel
    if t - dt_ <= 0:
        return None  # a time this small says nothing about the bandwidth
    lo = metrics.busbw_gbps(collective, world, nbytes, (t + dt_) / 1e6)
    hi = metrics.busbw_gbps(collective, world, nbytes, (t - dt_) / 1e6)
    return None if lo - db <= logged <= hi + db else metrics.busbw_gbps(collective, world, nbytes,
                                                                        t / 1e6)


def record(*, source: str, collective: str, algorithm: str, transport: str, world_size: int,
           ranks_per_node: int | None, nbytes: int, count: int, dtype: str, op: str,
           time_us: float, summary_of: str, iters: int | None = None, warmup: int | None = None,
           wrong: int | None = None, failed: bool = False, root: int | None = None,
           in_place: bool = False, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A collective record from one summary time (µs); ``collective`` may be any alias."""
    spec = resolve(collective)
    t = time_us / 1e6
    rpn = ranks_per_node or world_size
    return kinds.collective(
        status="wrong" if wrong or failed else "ok",
        collective=spec.name, algorithm=algorithm, transport=transport,
        world_size=world_size, ranks_per_node=rpn, nodes=max(1, world_size // rpn),
        nbytes=nbytes, count=count, dtype=dtype, op=op if spec.reduces else "none",
        root=root if spec.rooted else None, in_place=in_place, iters=iters,
        warmup=warmup, repetitions=1, time_us_median=time_us, time_us_mean=time_us,
        time_us_min=None, time_us_p5=None, time_us_p95=None, time_us_max=None,
        algbw_gbps=metrics.algbw_gbps(nbytes, t),
        busbw_gbps=metrics.busbw_gbps(spec.name, world_size, nbytes, t),
        wrong=wrong, bytes_sent_max=None, bytes_sent_inter_max=None, steps=None,
        timer=f"{source}: {summary_of}",
        samples_us=[time_us], samples_are_summaries=True, source=source,
        oversubscribed=False, **(extra or {}),
    )


def _where(rec: Mapping[str, Any]) -> str:
    at = rec.get("log_line")
    return f"line {at}" if isinstance(at, int) else str(at)


def duplicates(records: list[dict[str, Any]], source: str) -> list[str]:
    """One warning line when rows measure the same case more than once (re-runs pasted twice)."""
    seen: dict[tuple[Any, ...], Any] = {}
    dup = []
    for r in records:
        if not r["nbytes"]:
            continue  # nccl-tests prints every size below p words as 0 bytes: not a re-run
        key = tuple(r.get(k) for k in ("collective", "algorithm", "transport", "world_size",
                                        "nbytes", "dtype", "op", "root"))
        if key in seen:
            dup.append((_where(r), seen[key]))
        else:
            seen[key] = _where(r)
    if not dup:
        return []
    (at, first), *_ = dup
    return [f"warning: {len(dup)} duplicate {source} rows (same collective, size, dtype, op and "
            f"placement as an earlier row; first: {at}, like {first}); all kept"]


def write_import(out: Path, source: str, input_path: Path, imported: Imported) -> int:
    """Write ``out/meta.json`` and ``out/results.jsonl``; returns the number of records."""
    now = kinds.now()
    meta = kinds.meta(
        run_id=out.name, source=source, started=now,
        scenario={"name": f"{source} import of {input_path.name}",
                  "description": f"results of {source} read from {input_path}"},
        source_file=str(input_path), imported=now, finished=now, status="ok",
        launcher=f"imported from {source} output", **imported.meta)
    write_meta(out, meta)
    with ResultWriter(out) as w:
        for rec in imported.records:
            w.write({**rec, "run_id": out.name, "scenario": meta["scenario"]["name"]})
    return len(imported.records)
