"""``flight-recorder``: PyTorch's flight recorder dumps (pickle or JSON), one file per rank; the
fields read, the rank, and groups without ranks: docs/replay.md, "Trace formats". The dump holds
what its ring buffer kept: import the dumps of one step (dumped right after it).

Pickles are read with no class allowed: a dump is plain data, and anything else is refused
rather than run."""

from __future__ import annotations

import io
import json
import math
import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.replay.calls import ITEMSIZE, RankCall, TraceError, document, dtype_name, ranks_of
from bench.replay.formats import Read, trace_format

# profiling name (after "nccl:" / "gloo:") -> (op, sizes S is read from)
NAMES = {"all_reduce": ("all_reduce", "input"), "allreduce_coalesced": ("all_reduce", "input"),
         "broadcast": ("broadcast", "input"), "all_gather": ("all_gather", "output"),
         "_all_gather_base": ("all_gather", "output"),
         "all_gather_into_tensor_coalesced": ("all_gather", "output"),
         "ALLGATHER_coalesced": ("all_gather", "output"),
         "reduce_scatter": ("reduce_scatter", "input"),
         "_reduce_scatter_base": ("reduce_scatter", "input"),
         "reduce_scatter_tensor_coalesced": ("reduce_scatter", "input"),
         "REDUCE_SCATTER_coalesced": ("reduce_scatter", "input"),
         "all_to_all": ("all_to_all", "input"), "all_to_all_single": ("all_to_all", "input"),
         "send": ("send", "input"), "recv": ("recv", "output")}
SKIPPED = ("barrier", "all_reduce_barrier", "split", "new_window")
PEER = re.compile(r"(\d+)\s*(->|<-)\s*(\d+)")  # nccl:send 0->1, nccl:recv 1<-0 (group ranks)


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a dump holds plain data, not {module}.{name}")


def _parse(raw: bytes) -> Any:
    return json.loads(raw) if raw.lstrip()[:1] == b"{" else _PlainData(io.BytesIO(raw)).load()


def _rank_of(doc: dict[str, Any], path: Path) -> int:
    if isinstance(doc.get("rank"), int):
        return int(doc["rank"])
    m = re.search(r"(\d+)$", path.stem if path.suffix in (".json", ".pkl", ".pickle") else path.name)
    if not m:
        raise TraceError(str(path), "no rank: the dump names none and the file's name does not "
                                    "end in one (nccl_trace_rank_3)")
    return int(m.group(1))


def _numel(shapes: Any) -> int:
    return sum(math.prod(int(x) for x in s) for s in shapes)


def _entry(e: Any, rank: int, where: str) -> dict[str, Any] | None:
    if not isinstance(e, dict) or "profiling_name" not in e:
        raise TraceError(where, "not a flight-recorder entry (no profiling_name)")
    name = str(e["profiling_name"]).split(":", 1)[-1]
    base = name.split()[0] if name.split() else ""
    if base in SKIPPED:
        return None
    if base not in NAMES:
        raise TraceError(where, f"collective {base!r} cannot be replayed")
    op, side = NAMES[base]
    try:
        n = _numel(e[f"{side}_sizes"])
        dtypes = e[f"{side}_dtypes"] if f"{side}_dtypes" in e else e["input_dtypes"]
        dtype = dtype_name(dtypes[0], where) if dtypes else "float32"
        pg = e["process_group"]
        pg_name = str(pg[0] if isinstance(pg, list | tuple) else pg)
    except (KeyError, TypeError, ValueError, IndexError):
        raise TraceError(where, f"{base}: no sizes, element type or process group") from None
    peer = None
    if op in ("send", "recv"):
        m = PEER.search(name)
        if m is None:
            raise TraceError(where, f"{base}: no peer in {name!r} (expected 'a->b' or 'a<-b')")
        peer = int(m.group(3))  # send a->b: to b; recv a<-b: from b (a: this rank)
    t0, t1 = e.get("time_created_ns"), e.get("time_discovered_completed_ns")
    return {"op": op, "nbytes": n * ITEMSIZE[dtype], "dtype": dtype, "pg": pg_name, "peer": peer,
            "where": where, "start": t0 / 1e3 if t0 else None, "end": t1 / 1e3 if t1 else None}


@trace_format("flight-recorder", "PyTorch flight-recorder dumps (pickle or JSON), one per rank")
def read(paths: Sequence[Path]) -> Read:
    raw: dict[int, list[dict[str, Any]]] = {}
    pg_ranks: dict[str, tuple[int, ...]] = {}
    for p in paths:
        doc = document(p, _parse, (ValueError, EOFError, pickle.UnpicklingError, RecursionError,
                                   IndexError, TypeError), "flight-recorder dump", "entries",
                       "flight-recorder dump")
        rank = _rank_of(doc, p)
        if rank in raw:
            raise TraceError(str(p), f"a second dump of rank {rank}")
        for name, cfg in (doc.get("pg_config") or {}).items():
            if isinstance(cfg, dict) and (got := ranks_of(cfg.get("ranks", "[]"), f"{p}: pg_config")):
                pg_ranks[str(name)] = got
        raw[rank] = [x for i, e in enumerate(doc["entries"])
                     if (x := _entry(e, rank, f"{p}: entry {i} "
                                     f"({e.get('profiling_name') if isinstance(e, dict) else '?'})"))]
    world = max(raw) + 1
    members: dict[str, set[int]] = {}
    for r, es in raw.items():
        for e in es:
            members.setdefault(e["pg"], set()).add(r)
    by_rank: dict[int, list[RankCall]] = {}
    for r, es in raw.items():
        calls = []
        for e in es:
            group = pg_ranks.get(e["pg"]) or tuple(sorted(members[e["pg"]]))
            peer = None
            if e["peer"] is not None:
                if e["peer"] >= len(group):
                    raise TraceError(e["where"], f"peer {e['peer']} of a {len(group)}-rank group")
                peer = group[e["peer"]]
            calls.append(RankCall(r, e["op"], e["nbytes"], e["dtype"], e["where"],
                                  None if peer is not None else group, peer,
                                  group[0] if e["op"] == "broadcast" else None,
                                  e["start"], e["end"]))
        by_rank[r] = calls
    notes = (["flight-recorder: broadcasts replayed from their group's first rank (a dump "
              "records no root)"] if any(c.op == "broadcast" for cs in by_rank.values()
                                         for c in cs) else [])
    return Read(by_rank, world, sorted(set(pg_ranks.values())), notes)
