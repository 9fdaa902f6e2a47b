"""Slow links and slow nodes, named by host and rank, from probe records: the suspects the
confirmation pass re-measures. The rule: docs/probe.md, "Slow links and nodes"."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from bench.probe.matrix import probe_records
from bench.probe.record import MEASUREMENTS, MEDIAN_SE, SIGMA_PER_MAD, mad

FALSE_ALARM = 0.05  # chance that a clean run names anything, under normal noise
MIN_NODES = 3


def z_for(tests: int, false_alarm: float = FALSE_ALARM) -> float:
    """The one-sided z that keeps ``tests`` tests together under ``false_alarm`` (Bonferroni)."""
    return NormalDist().inv_cdf(1 - false_alarm / max(tests, 1))


def _spread(values: Sequence[float]) -> float:
    return SIGMA_PER_MAD * mad(values)


@dataclass(frozen=True)
class Outlier:
    what: str  # "node" or "link"
    name: str  # "node 3 (host h, ranks 6-7)" or "rank 2 (host a) - rank 9 (host b)"
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    link_class: str
    measurement: str  # latency | uni | bi
    nbytes: int
    excess: float  # relative: how much slower than the reference (0.5 = 50 % slower)
    noise: float  # relative standard error the excess was held against
    value_us: float  # the link's median time (node: the median over its links)
    reference_us: float  # the reference median time
    explained_by: str | None = None  # a slow link: the slow node at one of its ends


@dataclass(frozen=True)
class Link:
    a: int
    b: int
    node_a: int
    node_b: int
    cls: str
    t: float
    se: float
    ref: float
    spread: float  # robust sigma of the link medians of its group


def node_names(records: Iterable[Mapping[str, Any]]) -> dict[int, tuple[str, tuple[int, ...], str]]:
    """node -> (name, ranks, host) as :meth:`bench.probe.links.Layout.node_name` writes it."""
    from bench.probe.links import Layout

    hosts: dict[int, str] = {}
    node_of: dict[int, int] = {}
    for r in records:
        for end in ("src", "dst"):
            hosts[int(r[end])] = str(r[f"{end}_host"])
            node_of[int(r[end])] = int(r[f"{end}_node"])
    if not node_of:
        return {}
    ranks = sorted(node_of)
    if ranks != list(range(len(ranks))):  # not every rank seen: name the nodes as far as known
        return {n: (f"node {n}", tuple(r for r in ranks if node_of[r] == n),
                    hosts[next(r for r in ranks if node_of[r] == n)]) for n in set(node_of.values())}
    lay = Layout(tuple(node_of[r] for r in ranks), tuple(hosts[r] for r in ranks))
    return {n: (lay.node_name(n), tuple(members), lay.node_host(n))
            for n, members in enumerate(lay.nodes())}


def link_stats(records: Sequence[Mapping[str, Any]], prefix: str, nbytes: int) -> list[Link]:
    """Every link at ``nbytes``: its median time and noise under ``prefix``, and its group's
    median and spread (class and flows)."""
    rows = [r for r in records if int(r["nbytes"]) == nbytes]
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in rows:
        groups[(str(r["link_class"]), int(r.get("flows") or 1))].append(float(r[f"{prefix}_median"]))
    ref = {k: (float(np.median(v)), _spread(v)) for k, v in groups.items()}
    return [Link(int(r["src"]), int(r["dst"]), int(r["src_node"]), int(r["dst_node"]),
                  str(r["link_class"]), float(r[f"{prefix}_median"]), float(r[f"{prefix}_noise"]),
                  *ref[(str(r["link_class"]), int(r.get("flows") or 1))]) for r in rows]


def _slow_nodes(links: list[Link], threshold: float,
                z: float) -> list[tuple[int, str, float, float, float, float]]:
    """(node, class, R - 1, relative noise, node's median t, reference t) of each slow node."""
    out = []
    for cls in sorted({k.cls for k in links}):
        per: dict[int, list[Link]] = defaultdict(list)
        for k in (k for k in links if k.cls == cls):
            per[k.node_a].append(k)
            if k.node_b != k.node_a:
                per[k.node_b].append(k)
        if len(per) < MIN_NODES:
            continue
        value = {n: float(np.median([k.t / k.ref for k in ks])) for n, ks in per.items()}
        center = float(np.median(list(value.values())))
        between = _spread(list(value.values())) / center
        for n, ks in per.items():
            r = np.array([k.t / k.ref for k in ks])
            own = float(np.median([k.se / k.ref for k in ks]))
            spread = MEDIAN_SE * mad(r)
            noise = math.hypot(max(own, spread) / math.sqrt(len(ks)) / center, between)
            excess = value[n] / center - 1.0
            if excess > threshold and excess > z * noise:
                out.append((n, cls, excess, noise, float(np.median([k.t for k in ks])),
                            float(np.median([k.ref for k in ks]))))
    return out


def tests(records: Sequence[Mapping[str, Any]]) -> int:
    """How many tests :func:`find` makes: (links + nodes x classes) x measurements x sizes."""
    records = probe_records(records)
    links = {(int(r["src"]), int(r["dst"])) for r in records}
    node_classes = {(int(r[f"{e}_node"]), str(r["link_class"])) for r in records
                    for e in ("src", "dst")}
    sizes = {int(r["nbytes"]) for r in records}
    return (len(links) + len(node_classes)) * len(MEASUREMENTS) * len(sizes)


def find(records: Sequence[Mapping[str, Any]], threshold: float,
         z: float | None = None) -> list[Outlier]:
    """Slow nodes first, then slow links, each per measurement and size (rule: module doc);
    ``z`` defaults to :func:`z_for` the run's number of tests."""
    records = probe_records(records)
    z = z if z is not None else z_for(tests(records))
    names = node_names(records)
    host_of = {int(r[e]): str(r[f"{e}_host"]) for r in records for e in ("src", "dst")}
    nodes: list[Outlier] = []
    links: list[Outlier] = []
    for meas, prefix in MEASUREMENTS.items():
        for nbytes in sorted({int(r["nbytes"]) for r in records}):
            ls = link_stats(records, prefix, nbytes)
            slow = {}
            for n, cls, excess, noise, t, ref in _slow_nodes(ls, threshold, z):
                name, ranks, host = names[n]
                slow[(n, cls)] = name
                nodes.append(Outlier("node", name, ranks, (host,), cls, meas, nbytes, excess,
                                     noise, t, ref))
            for k in ls:
                excess, noise = k.t / k.ref - 1.0, math.hypot(k.se, k.spread) / k.ref
                if excess > threshold and excess > z * noise:
                    links.append(Outlier(
                        "link", f"rank {k.a} (host {host_of[k.a]}) - rank {k.b} (host {host_of[k.b]})",
                        (k.a, k.b), (host_of[k.a], host_of[k.b]), k.cls, meas, nbytes, excess,
                        noise, k.t, k.ref,
                        slow.get((k.node_a, k.cls)) or slow.get((k.node_b, k.cls))))
    return nodes + links


def flagged(outliers: Iterable[Outlier]) -> dict[tuple[str, str], list[Outlier]]:
    """(what, name) -> its flags, for each slow node and each slow link no slow node explains."""
    out: dict[tuple[str, str], list[Outlier]] = {}
    for o in outliers:
        if o.what == "node" or not o.explained_by:
            out.setdefault((o.what, o.name), []).append(o)
    return out

