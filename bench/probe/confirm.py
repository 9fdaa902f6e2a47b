"""What the confirmation pass re-measures: each suspect as one pair of ranks beside a reference
pair of its class. The choice: docs/probe.md, "The confirmation pass"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.probe.matrix import probe_records
from bench.probe.outliers import Link, Outlier, find, flagged, link_stats
from bench.probe.record import MEASUREMENTS

Pair = tuple[int, int]
Test = tuple[str, int]  # (measurement, nbytes)


@dataclass(frozen=True)
class Confirm:
    """The pass's budget: at most ``max_suspects`` suspects (0: no pass), each measured in
    ``blocks`` blocks of ``repeats`` samples per measurement and size, with the reference
    measured before the first block, between blocks and after the last."""

    threshold: float = 0.25  # also the tournament's (``threshold`` of a probe scenario)
    max_suspects: int = 16
    blocks: int = 3
    repeats: int = 5


@dataclass(frozen=True)
class Check:
    index: int
    name: str  # the suspect, as the tournament named it
    what: str  # node | link
    link_class: str
    pair: Pair  # measured for the suspect
    reference: Pair  # measured around it
    tests: tuple[Test, ...]  # the tournament's flags being re-judged

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(sorted({n for _, n in self.tests}))

    def fields(self, role: str, checks: int) -> dict[str, Any]:
        """What a record of this check says besides the pair's own fields."""
        return {"phase": "confirm", "check": self.index, "checks": checks, "suspect": self.name,
                "suspect_what": self.what, "role": role, "tests": [[m, n] for m, n in self.tests]}


@dataclass(frozen=True)
class Plan:
    checks: tuple[Check, ...]
    over_limit: tuple[str, ...] = ()  # flagged, not re-measured: beyond max_suspects
    no_reference: tuple[str, ...] = ()  # flagged, not re-measured: no reference pair


@dataclass(frozen=True)
class _Suspect:
    name: str
    what: str
    cls: str
    ranks: tuple[int, ...]
    flags: tuple[Outlier, ...]  # of its chosen class, most significant first


def _score(o: Outlier) -> tuple[float, float]:
    return (o.excess / o.noise if o.noise > 0 else math.inf, o.excess)


def suspects(found: Sequence[Outlier]) -> list[_Suspect]:
    """Slow nodes, then unexplained slow links, each most significant first."""
    out = []
    for (what, name), os in flagged(found).items():
        best = max(os, key=_score)
        flags = sorted((o for o in os if o.link_class == best.link_class), key=_score, reverse=True)
        out.append(_Suspect(name, what, best.link_class, best.ranks, tuple(flags)))
    return sorted(out, key=lambda s: (s.what != "node", tuple(-x for x in _score(s.flags[0]))))


def _nearest(links: Sequence[Link], target: float) -> Link | None:
    return min(links, key=lambda k: (abs(k.t / k.ref - target), k.a, k.b), default=None)


def plan(records: Sequence[Mapping[str, Any]], confirm: Confirm,
         found: Sequence[Outlier] | None = None) -> Plan:
    """The checks for the tournament's ``records`` (rule: module doc)."""
    records = probe_records(records)
    found = find(records, confirm.threshold) if found is None else found
    sus = suspects(found)
    busy = {r for s in sus for r in s.ranks}
    node_of = {int(r[e]): int(r[f"{e}_node"]) for r in records for e in ("src", "dst")}
    sus_nodes = {node_of[r] for s in sus if s.what == "node" for r in s.ranks}
    checks: list[Check] = []
    over, unref = [], []
    for s in sus:
        if len(checks) >= confirm.max_suspects:
            over.append(s.name)
            continue
        top = s.flags[0]
        links = [k for k in link_stats(records, MEASUREMENTS[top.measurement], top.nbytes)
                 if k.cls == s.cls]
        if s.what == "link":
            pair = (s.ranks[0], s.ranks[1])
        else:
            node = node_of[s.ranks[0]]
            own = [k for k in links if node in (k.node_a, k.node_b)]
            clear = [k for k in own if not ({k.node_a, k.node_b} - {node}) & sus_nodes]
            k = _nearest(clear or own, float(np.median([k.t / k.ref for k in own])))
            assert k is not None
            pair = (k.a, k.b)
        mine = set(s.ranks) | set(pair)
        ref = (_nearest([k for k in links if not {k.a, k.b} & (busy | mine)], 1.0)
               or _nearest([k for k in links if not {k.a, k.b} & mine], 1.0))
        if ref is None:
            unref.append(s.name)
            continue
        tests = tuple(sorted({(o.measurement, o.nbytes) for o in s.flags},
                             key=lambda t: (list(MEASUREMENTS).index(t[0]), t[1])))
        checks.append(Check(len(checks), s.name, s.what, s.cls, pair, (ref.a, ref.b), tests))
    return Plan(tuple(checks), tuple(over), tuple(unref))
