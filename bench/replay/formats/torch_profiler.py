"""``torch-profiler``: Kineto JSON traces of ``torch.profiler`` (``export_chrome_trace``), one
file per rank, recorded with ``record_shapes=True``. ``record_param_comms`` events are used
alone where a trace has any, else the ``c10d::`` and ``_c10d_functional::`` operator events
(which fields of each: docs/replay.md, "Trace formats"). Operator events name no group:
:mod:`bench.replay.merge` infers it. A call inside another is that one call."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.replay.calls import ITEMSIZE, RankCall, TraceError, document, dtype_name, ranks_of
from bench.replay.formats import Read, trace_format

# operator (no namespace or overload) -> (op, argument holding the payload, argument holding a
# multiplier or None): bench.training.comm.RULES, read from shapes instead of tensors
RULES: dict[str, tuple[str, int, int | None]] = {
    "allreduce_": ("all_reduce", 0, None), "allreduce_coalesced_": ("all_reduce", 0, None),
    "broadcast_": ("broadcast", 0, None), "_allgather_base_": ("all_gather", 0, None),
    "allgather_": ("all_gather", 0, None),
    "allgather_into_tensor_coalesced_": ("all_gather", 0, None),
    "_reduce_scatter_base_": ("reduce_scatter", 1, None),
    "reduce_scatter_": ("reduce_scatter", 1, None),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 1, None),
    "alltoall_base_": ("all_to_all", 1, None), "send": ("send", 0, None),
    "recv_": ("recv", 0, None),
    "all_reduce": ("all_reduce", 0, None), "all_reduce_": ("all_reduce", 0, None),
    "all_reduce_coalesced": ("all_reduce", 0, None),
    "all_gather_into_tensor": ("all_gather", 0, 1),
    "all_gather_into_tensor_coalesced": ("all_gather", 0, 1),
    "reduce_scatter_tensor": ("reduce_scatter", 0, None),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", 0, None),
    "all_to_all_single": ("all_to_all", 0, None),
}
NAMESPACES = ("c10d::", "_c10d_functional::")
# record_param_comms' collective names -> (op, which message size is S)
PARAM_COMMS = {"allreduce": ("all_reduce", "in"), "allreduce_coalesced": ("all_reduce", "in"),
               "all_reduce": ("all_reduce", "in"), "broadcast": ("broadcast", "in"),
               "_allgather_base": ("all_gather", "out"), "allgather": ("all_gather", "out"),
               "all_gather": ("all_gather", "out"),
               "allgather_into_tensor_coalesced": ("all_gather", "out"),
               "_reduce_scatter_base": ("reduce_scatter", "in"),
               "reduce_scatter": ("reduce_scatter", "in"),
               "reduce_scatter_tensor_coalesced": ("reduce_scatter", "in"),
               "all_to_all": ("all_to_all", "in"), "alltoall_base": ("all_to_all", "in"),
               "alltoall": ("all_to_all", "in"), "send": ("send", "in"), "recv": ("recv", "out")}
PARAM_COMMS_EVENT = "record_param_comms"
SKIPPED = ("barrier", "wait", "init", "")  # no payload to replay
EPS_US = 0.002  # Kineto's timestamps are µs with ns digits: containment within rounding


def _numel(dims: Any) -> int:
    if isinstance(dims, list) and all(isinstance(d, int) for d in dims):
        return math.prod(dims)
    if isinstance(dims, list):
        return sum(_numel(d) for d in dims if isinstance(d, list))
    raise ValueError(f"not a shape: {dims!r}")


def _first_shape(dims: Any) -> Any:
    while isinstance(dims, list) and dims and isinstance(dims[0], list):
        dims = dims[0]
    return dims


def _outermost(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events not inside another of ``events`` on the same thread, by start."""
    out: list[dict[str, Any]] = []
    open_: dict[Any, dict[str, Any]] = {}
    for e in sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        top = open_.get(e["tid"])
        if top is not None and e["ts"] + e["dur"] <= top["ts"] + top["dur"] + EPS_US:
            continue
        open_[e["tid"]] = e
        out.append(e)
    return sorted(out, key=lambda e: e["ts"])


class _Types:
    """Element types of the backend's own events (``gloo:all_reduce``), claimed in order by
    the operator events whose tensor lists name none."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = sorted((e for e in events if str(e.get("name", "")).startswith(
            ("gloo:", "nccl:", "mpi:", "ucc:"))), key=lambda e: e.get("ts", 0))
        self.used: set[int] = set()

    def claim(self, ts: float, shape: Any) -> str | None:
        for i, e in enumerate(self.events):
            a = e.get("args") or {}
            dims, types = a.get("Input Dims") or [], a.get("Input type") or []
            if i in self.used or e.get("ts", 0) < ts - EPS_US or not dims or not types:
                continue
            if _first_shape(dims) == shape:
                self.used.add(i)
                return str(types[0])
        return None


def _event(e: Any, where: str) -> dict[str, Any]:
    if not isinstance(e, dict) or not isinstance(e.get("args", {}), dict):
        raise TraceError(where, "not an event object")
    try:
        return {**e, "ts": float(e["ts"]), "dur": float(e.get("dur", 0.0)), "tid": e.get("tid")}
    except (KeyError, TypeError, ValueError):
        raise TraceError(where, "no start time (ts) or duration (dur)") from None


def _param_comms(e: dict[str, Any], rank: int, world: int, where: str) -> RankCall | None:
    a = e["args"]
    name = str(a.get("Collective name", ""))
    if name in SKIPPED:
        return None
    if name not in PARAM_COMMS:
        raise TraceError(where, f"collective {name!r} cannot be replayed")
    op, which = PARAM_COMMS[name]
    try:
        nelems = int(a["In msg nelems" if which == "in" else "Out msg nelems"])
        dtype = dtype_name(a["dtype"], where)
    except (KeyError, TypeError, ValueError):
        raise TraceError(where, f"{name}: no message size or dtype") from None
    group = (ranks_of(a["Process Group Ranks"], where) if "Process Group Ranks" in a
             else tuple(range(world)))
    if not group:  # the default group lists no ranks in some versions
        group = tuple(range(world))
    peer = None
    if op in ("send", "recv"):
        try:
            peer = group[int(a["Rank"])]
        except (KeyError, TypeError, ValueError, IndexError):
            raise TraceError(where, f"{name}: no peer rank in its group") from None
    return RankCall(rank, op, nelems * ITEMSIZE[dtype], dtype, where,
                    None if op in ("send", "recv") else group, peer,
                    group[0] if op == "broadcast" else None, e["ts"], e["ts"] + e["dur"])


def _operator(e: dict[str, Any], rank: int, types: _Types, where: str) -> RankCall:
    a = e["args"]
    op, at, times = RULES[e["name"].split("::", 1)[1].split(".")[0]]
    try:
        dims, kinds = a["Input Dims"], a["Input type"]
        n = _numel(dims[at]) * (int(a["Concrete Inputs"][times]) if times is not None else 1)
        kind = str(kinds[at])
    except (KeyError, IndexError, TypeError, ValueError):
        raise TraceError(where, "no argument shapes (record with record_shapes=True)") from None
    if kind.endswith("List"):
        found = types.claim(e["ts"], _first_shape(dims[at]))
        if found is None:
            raise TraceError(where, "the element type of its tensor list is not recorded (no "
                                    "backend event of the same shape)")
        kind = found
    dtype = dtype_name(kind, where)
    scalar = None
    if op in ("send", "recv", "broadcast"):
        try:
            scalar = int(a["Concrete Inputs"][2])
        except (KeyError, IndexError, TypeError, ValueError):
            raise TraceError(where, f"{op}: no peer or root rank recorded") from None
    return RankCall(rank, op, n * ITEMSIZE[dtype], dtype, where,
                    peer=scalar if op in ("send", "recv") else None,
                    root=scalar if op == "broadcast" else None,
                    start_us=e["ts"], end_us=e["ts"] + e["dur"])


def _one(path: Path) -> tuple[int, int, list[tuple[int, ...]], list[RankCall]]:
    doc = document(path, json.loads, (ValueError, RecursionError), "JSON trace", "traceEvents",
                   "torch profiler trace")
    info = doc.get("distributedInfo")
    if not isinstance(info, dict) or "rank" not in info or "world_size" not in info:
        raise TraceError(str(path), "no distributedInfo (rank, world_size): not a trace of a "
                                    "distributed job")
    rank, world = int(info["rank"]), int(info["world_size"])
    groups = [tuple(int(r) for r in g.get("ranks") or range(world))
              for g in info.get("pg_config") or [] if isinstance(g, dict)]
    events = []
    for i, raw in enumerate(doc["traceEvents"]):
        name = raw.get("name", "") if isinstance(raw, dict) else ""
        if name == PARAM_COMMS_EVENT or (isinstance(name, str) and name.startswith(NAMESPACES)
                                         and name.split("::", 1)[1].split(".")[0] in RULES):
            events.append(_event(raw, f"{path}: event {i} ({name})") | {"_i": i})
    params = [e for e in events if e["name"] == PARAM_COMMS_EVENT]
    calls: list[RankCall] = []
    if params:
        for e in _outermost(params):
            c = _param_comms(e, rank, world, f"{path}: event {e['_i']} ({e['name']})")
            if c is not None:
                calls.append(c)
    else:
        types = _Types([x for x in doc["traceEvents"] if isinstance(x, dict)])
        calls = [_operator(e, rank, types, f"{path}: event {e['_i']} ({e['name']})")
                 for e in _outermost(events)]
    return rank, world, groups, calls


@trace_format("torch-profiler", "torch.profiler Kineto JSON traces, one file per rank")
def read(paths: Sequence[Path]) -> Read:
    by_rank: dict[int, list[RankCall]] = {}
    worlds, groups = set(), set()
    for p in paths:
        rank, world, gs, calls = _one(p)
        if rank in by_rank:
            raise TraceError(str(p), f"a second trace of rank {rank}")
        by_rank[rank] = calls
        worlds.add(world)
        groups.update(gs)
    if len(worlds) != 1:
        raise TraceError(str(paths[-1]), f"traces of jobs of {sorted(worlds)} ranks: one job's")
    return Read(by_rank, worlds.pop(), sorted(groups))
