"""nccl-tests (and rccl-tests): text tables and ``-J`` JSON; a row gives an out-of-place
(``native``) and an in-place (``native_inplace``) record. docs/results.md, "Import"."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.store.importers import Imported, Options, ParseError, importer
from bench.store.importers.common import (
    WORD_BYTES,
    busbw_mismatch,
    dtype_of,
    duplicates,
    integer,
    number,
    record,
)
from bench.store.importers.detect import Hint, canonical, choose, from_command, from_filename, from_table
from bench.store.importers.lines import Line
from bench.store.importers.nccl_text import Columns, Test, scan

SOURCE = "nccl-tests"
ALGORITHM = {"out_of_place": "native", "in_place": "native_inplace"}
SUMMARY = "mean over timed iterations (nccl-tests' time column)"
MISSING = ("N/A", "n/a", "-")
MAX_RANKS = 1 << 20
HINT_ORDER = ("--collective", "the 'Collective test starting' line", "the command line",
              "the table's columns", "the column header", "the file name")


@dataclass(frozen=True)
class Row:
    n: int
    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    blocks: tuple[tuple[str, tuple[str, ...]], ...]  # (placement, (time, algbw, busbw, check))


def _row(line: Line, cols: Columns, in_place_only: bool) -> Row:
    toks, n, at = line.tokens, line.n, cols.at
    if len(toks) != len(cols.names):
        raise ParseError(n, f"expected {len(cols.names)} columns ({' '.join(cols.names)}), "
                            f"got {len(toks)}: {line.quote()}")
    places = ("in_place",) if in_place_only and len(cols.blocks) == 1 else ("out_of_place", "in_place")
    blocks = tuple((p, tuple(toks[b:b + 4])) for p, b in zip(places, cols.blocks)
                   if toks[b] not in MISSING)
    return Row(n, integer(toks[at["size"]], n, "size"), integer(toks[at["count"]], n, "count"),
               dtype_of(toks[at["type"]]), toks[at["redop"]].lower() if "redop" in at else None,
               integer(toks[at["root"]], n, "root") if "root" in at else None, blocks)


def _ratios(rows: list[Row]) -> set[int]:
    out = set()
    for r in rows:
        word = WORD_BYTES.get(r.dtype)
        if word and r.count > 0:
            q, rem = divmod(r.size, r.count * word)
            out.add(q if not rem else -1)
    return out


def _collective(test: Test, rows: list[Row], world: int, opts: Options) -> str:
    assert test.columns is not None
    cols = test.columns
    table = from_table(has_redop="redop" in cols.at, has_root="root" in cols.at, modern=cols.modern,
                       redops={r.redop for r in rows if r.redop}, ratios=_ratios(rows), world=world,
                       roots={r.root for r in rows if r.root is not None})
    hints = [*test.hints, *([table] if table else []), *from_filename(opts.filename)]
    hints.sort(key=lambda h: HINT_ORDER.index(h.source) if h.source in HINT_ORDER else len(HINT_ORDER))
    return choose(hints, opts.collective, cols.line)


def _layout(test: Test, opts: Options, inherited: int | None) -> tuple[int, int | None]:
    world = opts.world_size or (max(test.ranks) + 1 if test.ranks else inherited)
    if not world:
        line = test.columns.line if test.columns else test.start
        raise ParseError(line, "no '#  Rank N ... on HOST device ...' lines saying how many ranks "
                               "ran; pass --world-size N")
    per_host = set(Counter(h for h, _ in test.ranks.values()).values())
    complete = len(test.ranks) == world
    return world, opts.ranks_per_node or (per_host.pop() if complete and len(per_host) == 1 else None)


def _records(row: Row, collective: str, world: int, rpn: int | None, iters: int | None,
             warmup: int | None, modern: bool) -> list[dict[str, Any]]:
    out = []
    for placement, (t_tok, a_tok, b_tok, check) in row.blocks:
        t = number(t_tok, row.n, "time")
        if t < 0:
            raise ParseError(row.n, f"time: negative: {t_tok!r}")
        algbw = None if a_tok in MISSING else number(a_tok, row.n, "algbw")
        busbw = None if b_tok in MISSING else number(b_tok, row.n, "busbw")
        if busbw is not None and (computed := busbw_mismatch(collective, world, row.size, t_tok,
                                                             b_tok)) is not None:
            raise ParseError(row.n, f"{placement} busbw {b_tok} GB/s in the log, but {computed:.4g} "
                                    f"for {collective} at {world} ranks from its time {t_tok} us: "
                                    "the log measured another collective or world size (pass "
                                    "--collective / --world-size)")
        wrong = max_error = None
        if check not in MISSING:
            if modern:
                wrong = int(number(check, row.n, "#wrong"))
            else:
                max_error = number(check, row.n, "error")
        word = WORD_BYTES.get(row.dtype)
        extra = {"placement": placement, "busbw_log_gbps": busbw, "algbw_log_gbps": algbw,
                 "count_log": row.count, "log_line": row.n}
        if max_error is not None:
            extra["max_error_log"] = max_error
        out.append(record(source=SOURCE, collective=collective, algorithm=ALGORITHM[placement],
                          transport="nccl", world_size=world, ranks_per_node=rpn, nbytes=row.size,
                          count=row.size // word if word else row.count, dtype=row.dtype,
                          op=row.redop or "sum", time_us=t, summary_of=SUMMARY, iters=iters,
                          warmup=warmup, wrong=wrong, root=row.root,
                          in_place=placement == "in_place", extra=extra))
    return out


def parse_text(text: str, opts: Options) -> Imported:
    sc = scan(text)
    if not sc.tests:
        raise sc.skipped.no_rows(text, "not nccl-tests output: no result rows under a '# size "
                                       "count type ...' column header")
    records: list[dict[str, Any]] = []
    tests: list[dict[str, Any]] = []
    hosts: set[str] = set()
    devices: set[str] = set()
    world: int | None = None
    for test in sc.tests:
        assert test.columns is not None
        world, rpn = _layout(test, opts, world)
        rows = [_row(line, test.columns, test.in_place_only) for line in test.rows]
        collective = _collective(test, rows, world, opts)
        for row in rows:
            records += _records(row, collective, world, rpn, test.iters, test.warmup,
                                test.columns.modern)
        hosts |= {h for h, _ in test.ranks.values()}
        devices |= {d for _, d in test.ranks.values()}
        tests.append({"collective": collective, "line": test.start, "rows": len(rows),
                      "world_size": world, "iters": test.iters, "warmup": test.warmup,
                      "avg_busbw_log_gbps": test.avg_busbw})
    return Imported({"hosts": sorted(hosts), "devices": sorted(devices), **sc.skipped.meta(),
                     "nccl_tests": {"format": "text", "version": sc.versions.get("tests"),
                                    "nccl_version": sc.versions.get("nccl"),
                                    "rccl_version": sc.versions.get("rccl"),
                                    "iters": tests[0]["iters"], "warmup": tests[0]["warmup"],
                                    "tests": tests}},
                    records, duplicates(records, SOURCE), sc.skipped.count)


def _get(obj: object, key: str, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ParseError(0, f"{where}: missing {key!r} (not nccl-tests -J output?)")
    return obj[key]


def _tok(v: object, where: str) -> str:
    """A JSON number (or numeric string) as the token text would have it."""
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise ParseError(0, f"{where}: not a number: {str(v)[:40]!r}")
    return str(v).strip()


def parse_json(text: str, opts: Options) -> Imported:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(e.lineno, f"not valid JSON ({e.msg}, column {e.colno})") from None
    except (ValueError, RecursionError) as e:
        raise ParseError(0, f"not valid JSON ({type(e).__name__})") from None
    config, results = _get(doc, "config", "top level"), _get(doc, "results", "top level")
    if not isinstance(config, dict) or not isinstance(results, list):
        raise ParseError(0, "'config' is not an object or 'results' not a list (not nccl-tests -J?)")
    devices = [d for d in config.get("devices") or [] if isinstance(d, dict)]
    per_proc = 1
    for k in ("nthreads", "ngpus"):
        per_proc *= integer(_tok(config.get(k, 1), f"config.{k}"), 0, f"config.{k}")
    procs = (d for d in devices for _ in range(per_proc))
    test = Test(0, ranks={i: (str(d.get("hostname")), str(d.get("device_info")))
                          for i, d in enumerate(itertools.islice(procs, MAX_RANKS))})
    world, rpn = _layout(test, opts, None)
    args = doc.get("args") or [""]
    hints = [Hint(str(r.get("experiment_name")), "the 'Collective test starting' line", firm=True)
             for r in results[:1] if isinstance(r, dict) and canonical(str(r.get("experiment_name")))]
    hints += [h for h in [from_command(str(args[0]) if isinstance(args, list) else "", 0)] if h]
    collective = choose([*hints, *from_filename(opts.filename)], opts.collective, 0)
    iters, warmup = config.get("iterations"), config.get("warmup_iters")
    iters, warmup = (v if isinstance(v, int) else None for v in (iters, warmup))
    records = []
    for i, r in enumerate(results):
        w = f"results[{i}]"
        blocks = []
        for placement in ALGORITHM:
            b = r.get(placement) if isinstance(r, dict) else None
            if isinstance(b, dict):
                b = {"time": b.get("cpu_time"), **b}  # its time, else its cpu_time
                blocks.append((placement, tuple(_tok(b.get(k, "N/A"), f"{w}.{placement}.{k}")
                                                for k in ("time", "alg_bw", "bus_bw", "nwrong"))))
        dtype = dtype_of(str(_get(r, "type", w)))
        size, count = (integer(_tok(_get(r, k, w), f"{w}.{k}"), 0, f"{w}.{k}") for k in ("size", "count"))
        root = r.get("root")
        row = Row(0, size, count, dtype, str(_get(r, "redop", w)).lower(),
                  integer(str(root).strip(), 0, f"{w}.root") if root is not None else None,
                  tuple(blocks))
        try:
            recs = _records(row, collective, world, rpn, iters, warmup, True)
        except ParseError as e:
            raise ParseError(0, f"{w}: {e}") from None
        records += [{**rec, "log_line": f"results[{i}]"} for rec in recs]
    if not records:
        raise ParseError(0, "no results in the JSON file")
    return Imported({"hosts": sorted({h for h, _ in test.ranks.values()}),
                     "devices": sorted({d for _, d in test.ranks.values()}),
                     "nccl_tests": {"format": "json", "version": doc.get("version"),
                                    "nccl_version": doc.get("nccl_version"), "iters": iters,
                                    "warmup": warmup}}, records, duplicates(records, SOURCE))


@importer(SOURCE, "all_reduce_perf (and other *_perf, rccl-tests) text output or -J JSON file")
def parse(text: str, opts: Options) -> Imported:
    return parse_json(text, opts) if text.lstrip().startswith("{") else parse_text(text, opts)
