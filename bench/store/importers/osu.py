"""OSU Micro-Benchmarks collective latency tests, text output: the time is OSU's Max Latency
with ``-f`` (commbench's slowest rank), else its average. docs/results.md, "Import"."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bench.store.importers import Imported, Options, ParseError, importer
from bench.store.importers.common import WORD_BYTES, dtype_of, duplicates, integer, number, record
from bench.store.importers.detect import Hint, choose, from_command, from_filename
from bench.store.importers.lines import Line, Skipped, read

SOURCE = "osu"
_TITLE = re.compile(r"^OSU\s+([A-Za-z]+(?:-[A-Za-z]+)?)\s+(\S.{0,60}?)\s+Latency\s+Test\b"
                    r"(?:\s+v?([0-9][\w.]{0,20}))?", re.I)
_DTYPE = re.compile(r"^Datatype:\s*(\w+)", re.I)
_EXCHANGE = re.compile(r"\s+personali[sz]ed\s+exchange$", re.I)
_GPU_LIBS = re.compile(r"nccl|rccl|xccl", re.I)
COLUMNS = tuple((name, re.compile(pat)) for name, pat in (
    ("size", r"size\b"), ("avg", r"avg(?:erage)?\.?\s*latency\s*\(\s*us\s*\)"),
    ("min", r"min(?:imum)?\.?\s*latency\s*\(\s*us\s*\)"),
    ("max", r"max(?:imum)?\.?\s*latency\s*\(\s*us\s*\)"), ("iters", r"iterations\b"),
    ("validation", r"validation\b")))
PER_PEER = ("all_gather", "alltoall")  # OSU's size is one rank's block, not the whole buffer
TITLE = "the OSU title"


@dataclass
class Test:
    start: int
    hints: list[Hint] = field(default_factory=list)
    title: str | None = None
    version: str | None = None
    transport: str = "mpi"
    dtype: str = "float32"
    columns: list[str] | None = None
    rows: list[Line] = field(default_factory=list)


def _header(line: Line) -> list[str]:
    """Column names of an OSU header, matched by name (Markdown may have collapsed the spaces)."""
    text, pos, out = line.body.lower(), 0, []
    bad = ParseError(line.n, f"unrecognised OSU column header: {line.quote(80)}")
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        name, m = next(((name, m) for name, pat in COLUMNS if (m := pat.match(text, pos))),
                       ("", None))
        if m is None or name in out:
            raise bad
        out.append(name)
        pos = m.end()
    if out[:1] != ["size"] or "avg" not in out:
        raise bad
    return out


def scan(text: str) -> tuple[list[Test], Skipped]:
    tests, skipped = [Test(1)], Skipped()

    def start(line: Line) -> Test:
        if tests[-1].rows:
            tests.append(Test(line.n))
        return tests[-1]

    for line in read(text):
        body, cur = line.body, tests[-1]
        if line.kind != "text":
            skipped.add(line)
        elif m := _TITLE.match(body):
            t = start(line)
            t.title, t.version = body, m.group(3)
            name = _EXCHANGE.sub("", m.group(2))  # "All-to-All Personalized Exchange"
            t.hints.append(Hint(name, TITLE, line.n, firm=True))
            t.transport = "nccl" if _GPU_LIBS.search(m.group(1)) else "mpi"
        elif m := _DTYPE.match(body):
            cur.dtype = dtype_of(m.group(1))
        elif line.tokens[0].lower() == "size" and "latency" in body.lower():
            start(line).columns = _header(line)
        elif line.is_row and cur.columns is not None:
            cur.rows.append(line)
        elif not line.is_row and (hint := from_command(body, line.n)) and "osu_" in body:
            t = start(line)
            t.hints.append(hint)
            t.transport = "nccl" if _GPU_LIBS.search(body.split("osu_", 1)[1][:5]) else t.transport
        elif not line.hashed:
            skipped.add(line)
    return [t for t in tests if t.rows], skipped


def _records(test: Test, collective: str, opts: Options, world: int) -> list[dict[str, Any]]:
    assert test.columns is not None
    cols, out = test.columns, []
    itemsize = WORD_BYTES.get(test.dtype, 1)
    for line in test.rows:
        toks, n = line.tokens, line.n
        if len(toks) != len(cols):
            raise ParseError(n, f"expected {len(cols)} columns, got {len(toks)}: {line.quote()}")
        row: dict[str, float] = {}
        for c, t in zip(cols, toks):
            if c == "validation":
                if t.lower() not in ("pass", "fail", "passed", "failed"):
                    raise ParseError(n, f"validation: neither Pass nor Fail: {t[:20]!r}")
            elif c == "size":
                row[c] = integer(t, n, c)
            elif (row.setdefault(c, number(t, n, "latency" if c != "iters" else c))) < 0:
                raise ParseError(n, f"{c}: negative: {t!r}")
        failed = "validation" in cols and toks[cols.index("validation")].lower().startswith("fail")
        full = "max" in row
        size = int(row["size"])
        nbytes = size * world if collective in PER_PEER else size
        out.append(record(
            source=SOURCE, collective=collective, algorithm="native", transport=test.transport,
            world_size=world, ranks_per_node=opts.ranks_per_node, nbytes=nbytes,
            count=max(1, nbytes // itemsize), dtype=test.dtype, op="sum",
            time_us=row["max"] if full else row["avg"],
            summary_of=("mean over iterations, max over ranks (OSU -f 'Max Latency')" if full
                        else "mean over iterations and ranks (OSU 'Avg Latency'; run with -f "
                             "for the max over ranks)"),
            iters=int(row["iters"]) if "iters" in row else None, failed=failed,
            extra={"osu_size_bytes": size, "osu_avg_us": row["avg"], "osu_min_us": row.get("min"),
                   "osu_max_us": row.get("max"), "log_line": n}))
    return out


@importer(SOURCE, "osu_allreduce (and other collective latency tests, NCCL builds too), text, "
                  "with or without -f")
def parse(text: str, opts: Options) -> Imported:
    tests, skipped = scan(text)
    if not tests:
        raise skipped.no_rows(text, "not OSU output: no result rows under a '# Size  Avg "
                                    "Latency(us)' header")
    if not opts.world_size:
        raise ParseError(0, "OSU output does not say how many ranks ran; pass --world-size N")
    records: list[dict[str, Any]] = []
    meta = []
    for t in tests:
        assert t.columns is not None
        hints = sorted([*t.hints, *from_filename(opts.filename)], key=lambda h: not h.firm)
        collective = choose(hints, opts.collective, t.start)
        records += _records(t, collective, opts, opts.world_size)
        meta.append({"collective": collective, "title": t.title, "line": t.start, "rows": len(t.rows),
                     "transport": t.transport})
    head = tests[0]
    return Imported({**skipped.meta(),
                     "osu": {"title": head.title, "version": head.version,
                             "full": "max" in (head.columns or []), "tests": meta}},
                    records, duplicates(records, SOURCE), skipped.count)
