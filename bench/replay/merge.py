"""Each rank's calls, as its trace shows them, matched into the step's calls on groups (the rule,
and group inference for events that name none: docs/replay.md, "Trace formats"). Anything that
does not match is a :class:`TraceError` naming the event: a truncated trace, or ranks of
different steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.replay.calls import P2P, RankCall, TraceError


@dataclass(frozen=True)
class Matched:
    """One call of the step: ``members[i]`` issued it as its ``calls[i]``."""

    op: str
    group: tuple[int, ...]
    nbytes: int
    dtype: str
    root: int | None  # broadcast: global root; send: the sender
    calls: tuple[RankCall, ...]


def merge(by_rank: Mapping[int, Sequence[RankCall]], world: int,
          known_groups: Sequence[tuple[int, ...]] = ()) -> list[tuple[Matched, float | None]]:
    """The step's calls in order, each with its gap (µs: the most any member waited since its
    previous call ended; None where the trace has no times or the call is a rank's first)."""
    missing = [r for r in range(world) if r not in by_rank]
    if missing:
        raise TraceError(f"rank {missing[0]}", f"no trace for rank {missing[0]} of {world}")
    matched = _p2p(by_rank) + _known(by_rank) + _inferred(by_rank, known_groups or [tuple(range(world))])
    pos = {id(c): i for calls in by_rank.values() for i, c in enumerate(calls)}
    prev = {id(c): (calls[i - 1] if i else None) for calls in by_rank.values()
            for i, c in enumerate(calls)}
    matched.sort(key=lambda m: (min(pos[id(c)] for c in m.calls), m.group))
    return [(m, _gap(m, prev)) for m in matched]


def _gap(m: Matched, prev: Mapping[int, RankCall | None]) -> float | None:
    gaps = []
    for c in m.calls:
        p = prev[id(c)]
        if p is None or p.end_us is None or c.start_us is None:
            return None
        gaps.append(max(0.0, c.start_us - p.end_us))
    return round(max(gaps), 3) if gaps else None


def _check_same(a: RankCall, b: RankCall, what: str) -> None:
    if a.signature != b.signature or a.root != b.root:
        raise TraceError(b.where, f"{b.op} of {b.nbytes} B {b.dtype} on rank {b.rank} does not "
                                  f"match {what} on rank {a.rank} ({a.where}: {a.op} of "
                                  f"{a.nbytes} B {a.dtype}): ranks of different steps?")


def _known(by_rank: Mapping[int, Sequence[RankCall]]) -> list[Matched]:
    per: dict[tuple[int, ...], dict[int, list[RankCall]]] = {}
    for r, calls in by_rank.items():
        for c in calls:
            if c.op not in P2P and c.group is not None:
                if r not in c.group:
                    raise TraceError(c.where, f"rank {r} is not in its call's group {list(c.group)}")
                per.setdefault(c.group, {}).setdefault(r, []).append(c)
    out = []
    for g, seqs in per.items():
        n = {m: len(seqs.get(m, [])) for m in g}
        if len(set(n.values())) > 1:
            short = min(g, key=lambda m: n[m])
            long_ = max(g, key=lambda m: n[m])
            extra = seqs[long_][n[short]]
            raise TraceError(extra.where, f"rank {long_} has {n[long_]} calls on group "
                                          f"{list(g)}, rank {short} {n[short]}: a truncated trace?")
        for k in range(n[g[0]]):
            calls = tuple(seqs[m][k] for m in g)
            for c in calls[1:]:
                _check_same(calls[0], c, f"call {k} of the group")
            c0 = calls[0]
            out.append(Matched(c0.op, g, c0.nbytes, c0.dtype, c0.root, calls))
    return out


def _inferred(by_rank: Mapping[int, Sequence[RankCall]],
              candidates: Sequence[tuple[int, ...]]) -> list[Matched]:
    heads = {r: [c for c in calls if c.op not in P2P and c.group is None]
             for r, calls in by_rank.items()}
    at = dict.fromkeys(heads, 0)
    sets = sorted({tuple(sorted(g)) for g in candidates}, key=lambda g: (-len(g), g))
    out = []
    while any(at[r] < len(heads[r]) for r in heads):
        for g in sets:
            if all(m in heads and at[m] < len(heads[m]) for m in g):
                calls = tuple(heads[m][at[m]] for m in g)
                c0 = calls[0]
                if all(c.signature == c0.signature and c.root == c0.root for c in calls):
                    out.append(Matched(c0.op, g, c0.nbytes, c0.dtype, c0.root, calls))
                    for m in g:
                        at[m] += 1
                    break
        else:
            r = min((r for r in heads if at[r] < len(heads[r])), key=lambda r: at[r])
            c = heads[r][at[r]]
            raise TraceError(c.where, f"{c.op} of {c.nbytes} B {c.dtype} on rank {r} matches no "
                                      "group's calls (no group whose ranks all issue it next): a "
                                      "truncated trace, or ranks of different steps?")
    return out


def _p2p(by_rank: Mapping[int, Sequence[RankCall]]) -> list[Matched]:
    sends: dict[tuple[int, int], list[RankCall]] = {}
    recvs: dict[tuple[int, int], list[RankCall]] = {}
    for r, calls in by_rank.items():
        for c in calls:
            if c.op in P2P:
                if c.peer is None or c.peer == r or c.peer not in by_rank:
                    raise TraceError(c.where, f"{c.op} on rank {r}: peer {c.peer} is not another "
                                              "rank of the trace")
                (sends if c.op == "send" else recvs).setdefault(
                    (r, c.peer) if c.op == "send" else (c.peer, r), []).append(c)
    out = []
    for pair in sorted(set(sends) | set(recvs)):
        s, v = sends.get(pair, []), recvs.get(pair, [])
        if len(s) != len(v):
            odd = (s if len(s) > len(v) else v)[min(len(s), len(v))]
            raise TraceError(odd.where, f"rank {pair[0]} sends {len(s)} messages to rank "
                                        f"{pair[1]}, which receives {len(v)}: a truncated trace?")
        for a, b in zip(s, v):
            if a.nbytes != b.nbytes or a.dtype != b.dtype:
                raise TraceError(b.where, f"recv of {b.nbytes} B {b.dtype} on rank {b.rank} "
                                          f"does not match the send of {a.nbytes} B {a.dtype} "
                                          f"({a.where})")
            out.append(Matched("send", tuple(sorted(pair)), a.nbytes, a.dtype, pair[0], (a, b)))
    return out
