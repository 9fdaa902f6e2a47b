"""The verdict: from a bring-up's records, each host and each link ok, slow by X %, or failed, with
the evidence and the stage that showed it (the rules: docs/bringup.md#the-verdict).

A case's busbw here is at its mean iteration time, not the median the tables show: a host stalled
in one iteration of three has a median like its peers' and a mean that is not. A slow host or link
of the host and pairs stages is a suspect (:func:`suspects`), re-measured alone against a
reference group alone (stage ``<stage>-confirm``), and slow only when slower again."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OK, SLOW, FAILED = "ok", "slow", "failed"
RANK = {OK: 0, SLOW: 1, FAILED: 2}


@dataclass(frozen=True)
class Finding:
    """One stage's word on one host or link."""

    status: str
    by_pct: float  # how far below its reference (0 when ok or failed)
    stage: str
    evidence: str


@dataclass(frozen=True)
class Verdict:
    """Per host and per link (``"a -- b"``), what every stage found, worst first; plus the
    cluster-level findings of the all and scale stages."""

    hosts: Mapping[str, tuple[Finding, ...]]
    links: Mapping[str, tuple[Finding, ...]]
    cluster: tuple[Finding, ...] = field(default=())

    @staticmethod
    def worst(findings: Sequence[Finding]) -> Finding | None:
        bad = [f for f in findings if f.status != OK]
        return max(bad, key=lambda f: (RANK[f.status], f.by_pct)) if bad else None

    def status_of(self, findings: Sequence[Finding]) -> str:
        w = self.worst(findings)
        return w.status if w else OK

    @property
    def ok(self) -> bool:
        every = [*self.hosts.values(), *self.links.values(), self.cluster]
        return all(self.status_of(f) == OK for f in every)

    def bad_hosts(self) -> list[str]:
        return [h for h, f in self.hosts.items() if self.status_of(f) != OK]

    def bad_links(self) -> list[str]:
        return [link for link, f in self.links.items() if self.status_of(f) != OK]

    @property
    def judged(self) -> bool:
        """Whether any stage had a reference to judge against: one host alone has no peer (and,
        without a profile, no prediction), so an "ok" there would be evidence of nothing."""
        return any(self.hosts.values()) or any(self.links.values()) or bool(self.cluster)

    @property
    def word(self) -> str:
        """The verdict in a word or three: ok, not ok, or not judged (one host)."""
        if not self.ok:
            return "not ok"
        return "ok" if self.judged else f"not judged ({_hosts(len(self.hosts))})"

    def lines(self) -> list[str]:
        """One line per host and link that is not ok, then the cluster's; or that all is ok."""
        out = []
        for kind, table in (("host", self.hosts), ("link", self.links)):
            for name, findings in table.items():
                w = self.worst(findings)
                if w is not None:
                    out.append(f"{kind} {name}: {_word(w)} ({w.stage} stage: {w.evidence})")
        for f in self.cluster:
            if f.status != OK:
                out.append(f"cluster: {_word(f)} ({f.stage} stage: {f.evidence})")
        if not out and not self.judged:
            return [f"not judged: {_hosts(len(self.hosts))}, nothing to compare a host with (a "
                    "profile gives each case a prediction to be judged against)"]
        return out or [f"every host ({len(self.hosts)}) and link ({len(self.links)}) ok"]

    def as_dict(self) -> dict[str, Any]:
        def rows(table: Mapping[str, tuple[Finding, ...]]) -> list[dict[str, Any]]:
            return [{"name": n, "status": self.status_of(f),
                     "findings": [vars(x) for x in f]} for n, f in table.items()]

        return {"ok": self.ok, "judged": self.judged, "word": self.word,
                "hosts": rows(self.hosts), "links": rows(self.links),
                "cluster": [vars(x) for x in self.cluster], "lines": self.lines()}


def _hosts(n: int) -> str:
    return "one host" if n == 1 else f"{n} hosts"


def _word(f: Finding) -> str:
    return f"slow by {f.by_pct:.0f} %" if f.status == SLOW else f.status


def _num(x: Any) -> float | None:
    """A positive finite number, else None (records read through pandas hold NaN for absent
    fields)."""
    return float(x) if isinstance(x, (int, float)) and x == x and 0 < x < float("inf") else None


def link_name(a: str, b: str) -> str:
    return " -- ".join(sorted((a, b)))


def _key(r: Mapping[str, Any]) -> tuple[str, str]:
    return r["collective"], r["algorithm"]


def _largest_ok(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ok records at the stage's largest size, per (collective, algorithm)."""
    ok = [r for r in recs if r.get("status") == "ok"]
    top: dict[tuple[str, str], int] = {}
    for r in ok:
        top[_key(r)] = max(top.get(_key(r), 0), r["nbytes"])
    return [r for r in ok if r["nbytes"] == top[_key(r)]]


def _what(r: Mapping[str, Any]) -> str:
    from bench.units import format_size

    return f"{r['collective']} {r['algorithm']} {format_size(int(r['nbytes']))}"


Keyed = Mapping[tuple[str, str], dict[str, Any]]  # a group's record per (collective, algorithm)


def _reference(by_group: Mapping[Any, Keyed]) -> dict[tuple[str, str], float]:
    """Per key, the median busbw over the groups."""
    keys = {k for recs in by_group.values() for k in recs}
    return {k: statistics.median(recs[k]["busbw_gbps"] for recs in by_group.values() if k in recs)
            for k in keys}


def _peers(by_group: Mapping[Any, Keyed], ref: Mapping[tuple[str, str], float],
           ) -> dict[Any, tuple[float, dict[str, Any], float]]:
    """Each group's median ratio to ``ref`` over its keys: (ratio, its worst record, that
    record's reference busbw)."""
    out = {}
    for name, recs in by_group.items():
        pts = [(recs[k]["busbw_gbps"] / ref[k], recs[k], ref[k]) for k in recs if ref[k] > 0]
        if pts:
            _, r, refbw = min(pts, key=lambda x: x[0])
            out[name] = (statistics.median(x for x, _, _ in pts), r, refbw)
    return out


def _vs_median(r: Mapping[str, Any], ref: float) -> str:
    return f"{_what(r)}: {r['busbw_gbps']:.3g} GB/s busbw, the hosts' median {ref:.3g}"


class _Judge:
    def __init__(self, slow_pct: float) -> None:
        self.limit = 1 - slow_pct / 100
        self.hosts: dict[str, list[Finding]] = defaultdict(list)
        self.links: dict[str, list[Finding]] = defaultdict(list)
        self.cluster: list[Finding] = []

    def finding(self, ratio: float, stage: str, evidence: str) -> Finding:
        if ratio < self.limit:
            return Finding(SLOW, (1 - ratio) * 100, stage, evidence)
        return Finding(OK, 0.0, stage, evidence)

    def failures(self, recs: list[dict[str, Any]]) -> dict[tuple[str, ...], Finding]:
        out = {}
        for r in recs:
            if r.get("status") != "ok":
                reason = r.get("reason")
                why = reason if isinstance(reason, str) and reason else r.get("status")
                out.setdefault(tuple(r["group_hosts"]), Finding(
                    FAILED, 0.0, r["stage"], f"{_what(r)}: {why}"))
        return out

    def expected(self, recs: list[dict[str, Any]], stage: str) -> dict[tuple[str, ...], Finding]:
        """Each group against the prediction, where the records carry one."""
        per: dict[tuple[str, ...], list[tuple[float, dict[str, Any]]]] = defaultdict(list)
        for r in recs:
            e = _num(r.get("expected_busbw_gbps"))
            if e and r.get("status") == "ok":
                per[tuple(r["group_hosts"])].append((r["busbw_gbps"] / e, r))
        out = {}
        for g, pts in per.items():
            ratio = statistics.median(x for x, _ in pts)
            r = min(pts, key=lambda x: x[0])[1]
            out[g] = self.finding(ratio, stage, f"{_what(r)}: {ratio:.0%} of expected "
                                                f"({r['busbw_gbps']:.3g} of "
                                                f"{_num(r['expected_busbw_gbps']):.3g} GB/s busbw)")
        return out

    def host_stage(self, recs: list[dict[str, Any]]) -> None:
        ok = _largest_ok(recs)
        by_host: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
        for r in ok:
            by_host[r["group_hosts"][0]][_key(r)] = r
        peers = _peers(by_host, _reference(by_host)) if len(by_host) > 1 else {}
        for h, (ratio, r, ref) in peers.items():
            self.hosts[h].append(self.finding(ratio, "host", _vs_median(r, ref)))
        for g, f in {**self.expected(ok, "host"), **self.failures(recs)}.items():
            self.hosts[g[0]].append(f)

    def pair_stage(self, recs: list[dict[str, Any]]) -> None:
        ok = _largest_ok(recs)
        pairs: dict[tuple[str, ...], dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
        for r in ok:
            pairs[tuple(r["group_hosts"])][_key(r)] = r
        hosts = sorted({h for p in pairs for h in p})
        slow_hosts: set[str] = set()
        if len(hosts) > 2:
            per_host: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
            for h in hosts:  # a host's pairs: their median record per key
                mine = [recs for p, recs in pairs.items() if h in p]
                per_host[h] = {k: sorted((m[k] for m in mine if k in m),
                                         key=lambda r: r["busbw_gbps"])[len(mine) // 2]
                               for k in {k for m in mine for k in m}}
            ref = _reference(per_host)
            for h, (ratio, r, refbw) in _peers(per_host, ref).items():
                f = self.finding(ratio, "pairs", (
                    f"{_what(r)}: its pairs' median {r['busbw_gbps']:.3g} GB/s busbw, the hosts' "
                    f"median {refbw:.3g}"))
                self.hosts[h].append(f)
                if f.status != OK:
                    slow_hosts.add(h)
            for p, (ratio, r, refbw) in _peers(pairs, ref).items():
                if not slow_hosts & set(p):  # else explained by its host
                    self.links[link_name(*p)].append(self.finding(ratio, "pairs", _vs_median(r, refbw)))
        for g, f in self.expected(ok, "pairs").items():
            if not slow_hosts & set(g):
                self.links[link_name(*g)].append(f)
        for g, f in self.failures(recs).items():
            self.links[link_name(*g)].append(f)

    def cluster_stage(self, recs: list[dict[str, Any]], stage: str) -> None:
        for g, f in {**self.expected(_largest_ok(recs), stage), **self.failures(recs)}.items():
            self.cluster.append(Finding(f.status, f.by_pct, stage,
                                        f"{len(g)} hosts: {f.evidence}"))

    def confirmed(self, stage: str, recs: list[dict[str, Any]]) -> None:
        """Each slow finding of ``stage`` whose target was re-measured alone (``recs``, stage
        ``<stage>-confirm``) is replaced by what the re-measuring found: slow only if the
        suspect group was slower than the reference group again, block after block."""
        by_target: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            if r.get("status") == "ok":
                by_target[r["confirm_of"]].append(r)
        for target, got in by_target.items():
            kind, _, name = target.partition(":")
            table = self.hosts if kind == "host" else self.links
            ratios, worst = [], None
            for k in {_key(r) for r in got}:
                sus = [r["busbw_gbps"] for r in got if _key(r) == k and r["role"] == "suspect"]
                ref = [r["busbw_gbps"] for r in got if _key(r) == k and r["role"] == "reference"]
                if sus and ref and statistics.median(ref) > 0:
                    ratios.append(statistics.median(sus) / statistics.median(ref))
                    if worst is None or ratios[-1] <= min(ratios):
                        worst = (k, statistics.median(sus), statistics.median(ref), len(sus))
            if not ratios or worst is None:
                continue
            ratio = statistics.median(ratios)
            (coll, alg), a, b, n = worst
            f = self.finding(ratio, f"{stage}, re-measured alone", (
                f"{coll} {alg}: {a:.3g} GB/s busbw against a reference group's {b:.3g}, "
                f"medians of {n} blocks each alone"))
            table[name] = [x for x in table[name] if not (x.stage == stage and x.status == SLOW)]
            table[name].append(f)


def judged(r: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of record ``r`` whose ``busbw_gbps`` is at its mean time, as the verdict judges."""
    out = dict(r)
    median, mean = _num(r.get("time_us_median")), _num(r.get("time_us_mean"))
    if median and mean and r.get("busbw_gbps") is not None:
        out["busbw_gbps"] = r["busbw_gbps"] * median / mean
    return out


def _groups(recs: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return sorted({tuple(r["group_hosts"]) for r in recs})


def suspects(records: Iterable[Mapping[str, Any]], slow_pct: float,
             ) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """What one stage's records (``host`` or ``pairs``) make suspect, to re-measure alone:
    (target, the suspect group's hosts, a reference group's hosts of good hosts). A target is
    ``host:NAME`` or ``link:A -- B``."""
    recs = [judged(r) for r in records]
    if not recs:
        return []
    stage = recs[0]["stage"]
    j = _Judge(slow_pct)
    (j.host_stage if stage == "host" else j.pair_stage)(recs)
    bad = {h for h, f in j.hosts.items() if any(x.status == SLOW for x in f)}
    good = [h for h in sorted({h for g in _groups(recs) for h in g}) if h not in bad]
    out: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    if stage == "host":
        return [(f"host:{h}", (h,), (good[len(good) // 2],)) for h in sorted(bad) if good]
    if len(good) >= 2:
        out += [(f"host:{h}", (h, good[0]), (good[0], good[1])) for h in sorted(bad)]
    slow_links = [n for n, f in j.links.items() if any(x.status == SLOW for x in f)]
    fine = [g for g in _groups(recs) if link_name(*g) not in slow_links and not set(g) & bad]
    for n in slow_links:
        a, b = n.split(" -- ")
        ref = next((g for g in fine if g != (a, b)), None)
        if ref is not None:
            out.append((f"link:{n}", (a, b), ref))
    return out


def judge(records: Iterable[Mapping[str, Any]], slow_pct: float) -> Verdict:
    """The verdict on a bring-up's records (each with ``stage`` and ``group_hosts``)."""
    by_stage: dict[str, list[dict[str, Any]]] = defaultdict(list)
    hosts: set[str] = set()
    for r in records:
        if "stage" in r:
            by_stage[r["stage"]].append(judged(r))
            hosts.update(r["group_hosts"])
    j = _Judge(slow_pct)
    j.host_stage(by_stage.get("host", []))
    j.confirmed("host", by_stage.get("host-confirm", []))
    j.pair_stage(by_stage.get("pairs", []))
    j.confirmed("pairs", by_stage.get("pairs-confirm", []))
    for stage in ("all", "scale"):
        j.cluster_stage(by_stage.get(stage, []), stage)
    order = {h: tuple(j.hosts.get(h, ())) for h in sorted(hosts)}
    return Verdict(order, {k: tuple(v) for k, v in sorted(j.links.items())}, tuple(j.cluster))
