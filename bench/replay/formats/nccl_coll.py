"""``nccl-coll``: NCCL's ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL`` lines, one file holding
every process's lines or a file per process. The call lines are NCCL's ``src/enqueue.cc``; what
each field means and how ranks and groups are found: docs/replay.md, "Trace formats"::

    host:pid:tid [dev] NCCL INFO AllReduce: opCount 0 sendbuff 0x.. recvbuff 0x.. count 1024
    datatype 7 op 0 root 0 comm 0x.. [nranks=8] stream 0x.."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bench.replay.calls import ITEMSIZE, RankCall, TraceError
from bench.replay.formats import Read, trace_format

# ncclDataType_t (src/nccl.h.in): ncclInt8 = 0 ... ncclFloat8e5m2 = 11
DATATYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
             "float64", "bfloat16", "float8_e4m3", "float8_e5m2")
OPS = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
       "Broadcast": "broadcast", "AlltoAll": "all_to_all", "Send": "send", "Recv": "recv"}
PER_RANK = ("all_gather", "reduce_scatter", "all_to_all")  # count is one rank's block
HEAD = re.compile(r"^(?P<proc>\S+?:\d+):\d+ \[\d+\] NCCL INFO (?P<rest>.*)$")
CALL_START = re.compile(r"^(?P<name>\w+): opCount ")
CALL = re.compile(r"^(?P<name>\w+): opCount [0-9a-fA-F]+ sendbuff \S+ recvbuff \S+ "
                  r"count (?P<count>\d+) datatype (?P<dt>\d+) op \d+ root (?P<root>-?\d+) "
                  r"comm (?P<comm>\S+) \[nranks=(?P<n>\d+)\] stream \S+\s*$")
INIT = re.compile(r"comm (?P<comm>\S+) rank (?P<rank>\d+) nranks (?P<n>\d+) .*?"
                  r"commId (?P<id>0x[0-9a-fA-F]+) - Init COMPLETE")

Comm = tuple[str, str]  # (process, comm pointer)


@trace_format("nccl-coll", "NCCL_DEBUG_SUBSYS=COLL (and INIT) log lines, one or many files")
def read(paths: Sequence[Path]) -> Read:
    procs: list[str] = []  # in order of appearance
    calls: list[tuple[str, dict[str, str], str]] = []
    init: dict[Comm, tuple[int, int, str]] = {}  # -> (rank in comm, nranks, commId)
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise TraceError(str(p), e.strerror or str(e)) from None
        for i, line in enumerate(text.splitlines(), 1):
            m = HEAD.match(line.strip())
            if not m:
                continue
            proc, rest = m.group("proc"), m.group("rest")
            if proc not in procs:
                procs.append(proc)
            if (im := INIT.search(rest)) is not None:
                init[(proc, im.group("comm"))] = (int(im.group("rank")), int(im.group("n")),
                                                  im.group("id"))
            elif (s := CALL_START.match(rest)) is not None:
                where = f"{p}:{i}: {s.group('name')}"
                c = CALL.match(rest)
                if c is None:
                    raise TraceError(where, "a call line cut short or not NCCL's: truncated?")
                if c.group("name") not in OPS:
                    raise TraceError(where, f"{c.group('name')} cannot be replayed")
                calls.append((proc, c.groupdict(), where))
    if not calls:
        raise TraceError(str(paths[0]), "no NCCL call lines (run with NCCL_DEBUG=INFO "
                                        "NCCL_DEBUG_SUBSYS=COLL)")
    rank_of, members, notes = _ranks(procs, calls, init)
    by_rank: dict[int, list[RankCall]] = {r: [] for r in rank_of.values()}
    for proc, c, where in calls:
        comm = (proc, c["comm"])
        group = members[comm]
        op = OPS[c["name"]]
        n, dt = int(c["count"]), int(c["dt"])
        if dt >= len(DATATYPES):
            raise TraceError(where, f"datatype {dt} is no ncclDataType_t")
        dtype = DATATYPES[dt]
        count = n * len(group) if op in PER_RANK else n
        root = int(c["root"])
        if op in ("send", "recv", "broadcast") and not 0 <= root < len(group):
            raise TraceError(where, f"root {root} of a {len(group)}-rank communicator")
        p2p = op in ("send", "recv")
        by_rank[rank_of[proc]].append(RankCall(
            rank_of[proc], op, count * ITEMSIZE[dtype], dtype, where, None if p2p else group,
            group[root] if p2p else None, group[root] if op == "broadcast" else None))
    return Read(by_rank, len(procs), sorted(set(members.values())), notes)


def _ranks(procs: list[str], calls: list[tuple[str, dict[str, str], str]],
           init: dict[Comm, tuple[int, int, str]]
           ) -> tuple[dict[str, int], dict[Comm, tuple[int, ...]], list[str]]:
    """Each process's global rank and each communicator's members (global ranks, in comm rank
    order)."""
    used = {(proc, c["comm"]): (c, where) for proc, c, where in calls}
    world = len(procs)
    if all(k in init for k in used):
        rank_of = {}
        for proc in procs:
            mine = [v for (p, _), v in init.items() if p == proc]
            biggest = max(mine, key=lambda v: v[1], default=None)
            if biggest is None or biggest[1] != world:
                raise TraceError(proc, f"no communicator of all {world} processes initialised "
                                       "on this process: its global rank is unknown")
            rank_of[proc] = biggest[0]
        by_id: dict[str, dict[int, int]] = {}
        for (proc, _), (r, _, cid) in init.items():
            if proc in rank_of:
                by_id.setdefault(cid, {})[r] = rank_of[proc]
        members = {k: tuple(v for _, v in sorted(by_id[init[k][2]].items())) for k in used}
        return rank_of, members, []
    for (_, comm), (c, where) in used.items():
        if int(c["n"]) != world:
            raise TraceError(where, f"communicator {comm} has {c['n']} of {world} processes and "
                                    "no Init COMPLETE line names its ranks (log with "
                                    "NCCL_DEBUG_SUBSYS=INIT,COLL)")
    rank_of = {p: i for i, p in enumerate(procs)}
    return rank_of, dict.fromkeys(used, tuple(range(world))), [
        "nccl-coll: no Init COMPLETE lines: processes ranked in order of appearance "
        f"({', '.join(procs[:4])}{', ...' if world > 4 else ''})"]
