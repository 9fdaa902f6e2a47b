"""nccl-tests (``all_reduce_perf`` and friends): the text table and the ``-J`` JSON file.

Each result row gives two records: out-of-place (``algorithm: native``) and in-place
(``algorithm: native_inplace``), both with ``transport: nccl``. nccl-tests reports the mean time
over its timed iterations (of rank 0's process, after a barrier), so ``samples_us`` holds that
one mean, marked ``samples_are_summaries``. algbw/busbw are recomputed with commbench's
definitions (identical to nccl-tests'); the tool's own busbw is kept as ``reported_busbw_gbps``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from bench.importers import Imported, Options, ParseError, importer
from bench.importers.common import DTYPES, record

SOURCE = "nccl-tests"
PROGRAMS = {"all_reduce": "allreduce", "all_gather": "allgather",
            "reduce_scatter": "reduce_scatter", "broadcast": "broadcast", "reduce": "reduce"}
PLACEMENT = (("out_of_place", "native"), ("in_place", "native_inplace"))
SUMMARY = "mean over timed iterations (nccl-tests' time column)"
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
                   r"\[[^\]]*\]\s+(.*)$")
_SETTINGS = re.compile(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)")
_PROGRAM = re.compile(r"(?:Collective test starting:\s*|^)(\S*?)(\w+?)_perf")
_LOG = re.compile(r"\bNCCL (INFO|WARN|TRACE)\b|^\s*$")


def collective_of(text: str) -> str:
    m = _PROGRAM.search(text)
    return PROGRAMS.get(m.group(2), "allreduce") if m else "allreduce"


def _float(tok: str, line: int, what: str) -> float:
    try:
        return float(tok)
    except ValueError:
        raise ParseError(line, f"{what}: not a number: {tok!r}") from None


def _wrong(tok: str | float | None) -> int | None:
    if tok is None or tok == "N/A":
        return None
    return int(float(tok))


def _records(nbytes: int, count: int, dtype: str, op: str, blocks: dict[str, dict[str, Any]],
             world: int, rpn: int | None, collective: str, iters: int | None,
             warmup: int | None) -> list[dict[str, Any]]:
    out = []
    for placement, alg in PLACEMENT:
        b = blocks.get(placement)
        if not b:
            continue
        out.append(record(source=SOURCE, collective=collective, algorithm=alg, transport="nccl",
                          world_size=world, ranks_per_node=rpn, nbytes=nbytes, count=count,
                          dtype=DTYPES.get(dtype.lower(), dtype), op=op, time_us=b["time"],
                          summary_of=SUMMARY, iters=iters, warmup=warmup,
                          wrong=_wrong(b.get("wrong")),
                          extra={"reported_busbw_gbps": b.get("busbw"), "placement": placement}))
    return out


def _layout(hosts: list[str], opts: Options) -> tuple[int, int | None]:
    world = len(hosts) or opts.world_size
    if not world:
        raise ParseError(0, "no '#  Rank' lines saying how many ranks ran; pass --world-size")
    per_host = set(Counter(hosts).values())
    rpn = opts.ranks_per_node or (per_host.pop() if len(per_host) == 1 else None)
    return world, rpn


def parse_text(text: str, opts: Options) -> Imported:
    columns: list[str] | None = None
    hosts: list[str] = []
    devices: list[str] = []
    iters = warmup = None
    rows: list[tuple[int, list[str]]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            if m := _RANK.match(line):
                hosts.append(m.group(2))
                devices.append(m.group(3))
            elif m := _SETTINGS.search(line):
                warmup, iters = int(m.group(1)), int(m.group(2))
            elif re.match(r"#\s*size\s+count\b", line):
                columns = line.lstrip("#").split()
            continue
        if _LOG.search(line):
            continue
        if columns is None:
            raise ParseError(n, f"not nccl-tests output (a row before the column header): {line[:60]!r}")
        toks = line.split()
        if len(toks) != len(columns) or not toks[0].isdigit():
            raise ParseError(n, f"expected {len(columns)} columns ({' '.join(columns)}), "
                                f"got {len(toks)}: {line[:60]!r}")
        rows.append((n, toks))
    if not rows:
        raise ParseError(len(text.splitlines()), "no result rows found (is this nccl-tests output?)")
    assert columns is not None
    world, rpn = _layout(hosts, opts)
    starts = [i for i, c in enumerate(columns) if c in ("time", "cputime")]
    collective = collective_of(text)
    records = []
    for n, toks in rows:
        blocks = {}
        for (placement, _), s in zip(PLACEMENT, starts):
            blocks[placement] = {"time": _float(toks[s], n, "time"),
                                 "busbw": _float(toks[s + 2], n, "busbw"), "wrong": toks[s + 3]}
        records += _records(int(toks[0]), int(_float(toks[1], n, "count")), toks[2], toks[3],
                            blocks, world, rpn, collective, iters, warmup)
    return Imported({"hosts": sorted(set(hosts)), "devices": sorted(set(devices)),
                     "nccl_tests": {"format": "text", "iters": iters, "warmup": warmup}}, records)


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ParseError(0, f"{where}: missing {key!r} (not nccl-tests -J output?)")
    return obj[key]


def parse_json(text: str, opts: Options) -> Imported:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(e.lineno, f"not valid JSON ({e.msg}, column {e.colno})") from None
    config = _need(doc, "config", "top level")
    results = _need(doc, "results", "top level")
    devices = config.get("devices") or []
    per_proc = int(config.get("nthreads", 1)) * int(config.get("ngpus", 1))
    hosts = [str(d.get("hostname")) for d in devices for _ in range(per_proc)]
    world, rpn = _layout(hosts, opts)
    args = doc.get("args") or []
    collective = collective_of(" ".join(map(str, args[:1]))) if args else "allreduce"
    iters, warmup = config.get("iterations"), config.get("warmup_iters")
    records = []
    for i, r in enumerate(results):
        where = f"results[{i}]"
        blocks = {}
        for placement, _ in PLACEMENT:
            b = r.get(placement) if isinstance(r, dict) else None
            if b:
                t = b.get("time", b.get("cpu_time"))
                if not isinstance(t, int | float):
                    raise ParseError(0, f"{where}.{placement}.time: not a number: {t!r}")
                blocks[placement] = {"time": float(t), "busbw": b.get("bus_bw"),
                                     "wrong": b.get("nwrong")}
        records += _records(int(_need(r, "size", where)), int(_need(r, "count", where)),
                            str(_need(r, "type", where)), str(_need(r, "redop", where)), blocks,
                            world, rpn, collective, iters, warmup)
    if not records:
        raise ParseError(0, "no results in the JSON file")
    return Imported({"hosts": sorted(set(hosts)),
                     "devices": sorted({str(d.get("device_info")) for d in devices}),
                     "nccl_tests": {"format": "json", "version": doc.get("version"),
                                    "nccl_version": doc.get("nccl_version"), "iters": iters,
                                    "warmup": warmup}}, records)


@importer(SOURCE, "all_reduce_perf (and other *_perf) text output or -J JSON file")
def parse(text: str, opts: Options) -> Imported:
    return parse_json(text, opts) if text.lstrip().startswith("{") else parse_text(text, opts)
