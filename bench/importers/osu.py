"""OSU Micro-Benchmarks collective latency tests (``osu_allreduce`` and friends), text output.

Without ``-f`` a row is ``size  avg``: the mean over iterations of each rank, averaged over ranks.
With ``-f`` it adds min and max over ranks of those per-rank means, and the iteration count.
commbench's time is the slowest rank per iteration, so the closest OSU number is the max over
ranks (``-f``); without ``-f`` the average is used and the record says so. OSU does not print how
many ranks ran: pass ``--world-size``. Records: ``algorithm: native``, ``transport: mpi``.
"""

from __future__ import annotations

import re

from bench.importers import Imported, Options, ParseError, importer
from bench.importers.common import DTYPES, record

SOURCE = "osu"
_TITLE = re.compile(r"^#\s*OSU\s+(MPI(?:-\w+)?)\s+(\w+)\s+Latency Test\s*(v[\d.]+)?", re.I)
_DTYPE = re.compile(r"^#\s*Datatype:\s*(\w+)", re.I)
COLLECTIVES = {"allreduce": "allreduce", "allgather": "allgather",
               "reduce_scatter": "reduce_scatter", "bcast": "broadcast", "reduce": "reduce"}
COLUMNS = {"size": "size", "avg latency(us)": "avg", "min latency(us)": "min",
           "max latency(us)": "max", "iterations": "iters"}


def _header(line: str, n: int) -> list[str]:
    names = [c.strip().lower() for c in re.split(r"\s{2,}", line.lstrip("#").strip())]
    unknown = [c for c in names if c not in COLUMNS]
    if unknown or "avg latency(us)" not in names:
        raise ParseError(n, f"unrecognised OSU column header: {line.strip()[:80]!r}")
    return [COLUMNS[c] for c in names]


@importer(SOURCE, "osu_allreduce (and other collective latency tests) text, with or without -f")
def parse(text: str, opts: Options) -> Imported:
    if not opts.world_size:
        raise ParseError(0, "OSU output does not say how many ranks ran; pass --world-size N")
    title = version = None
    collective, dtype = "allreduce", "float32"
    columns: list[str] | None = None
    records = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if m := _TITLE.match(line):
                title, version = line.lstrip("# ").strip(), m.group(3)
                collective = COLLECTIVES.get(m.group(2).lower(), m.group(2).lower())
            elif m := _DTYPE.match(line):
                dtype = DTYPES.get(m.group(1).lower(), m.group(1).lower())
            elif "latency" in line.lower():
                columns = _header(line, n)
            continue
        if columns is None:
            raise ParseError(n, f"not OSU output (a row before the column header): {line[:60]!r}")
        toks = line.split()
        if len(toks) != len(columns):
            raise ParseError(n, f"expected {len(columns)} columns, got {len(toks)}: {line[:60]!r}")
        try:
            row = {c: float(t) for c, t in zip(columns, toks)}
        except ValueError:
            raise ParseError(n, f"not a number in {line[:60]!r}") from None
        full = "max" in row
        nbytes = int(row["size"])
        itemsize = 1 if dtype == "int8" else 8 if dtype.endswith("64") else 4
        records.append(record(
            source=SOURCE, collective=collective, algorithm="native", transport="mpi",
            world_size=opts.world_size, ranks_per_node=opts.ranks_per_node, nbytes=nbytes,
            count=max(1, nbytes // itemsize), dtype=dtype, op="sum",
            time_us=row["max"] if full else row["avg"],
            summary_of=("mean over iterations, max over ranks (OSU -f 'Max Latency')" if full
                        else "mean over iterations and ranks (OSU 'Avg Latency'; run with -f "
                             "for the max over ranks)"),
            iters=int(row["iters"]) if "iters" in row else None,
            extra={"osu_avg_us": row["avg"], "osu_min_us": row.get("min"),
                   "osu_max_us": row.get("max")}))
    if not records:
        raise ParseError(len(text.splitlines()), "no result rows found (is this OSU output?)")
    return Imported({"osu": {"title": title, "version": version, "full": "max" in columns}
                     if columns else {}}, records)
