"""The probe's closing lines: per link class, latency and bandwidth; then the slow nodes and
links (:mod:`bench.probe.outliers`), or that none was found and at which threshold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.probe.matrix import class_summary, probe_records
from bench.probe.outliers import find, slow_nodes, tests, unexplained_links, z_for
from bench.units import format_size


def summary_lines(records: Sequence[Mapping[str, Any]], threshold: float) -> list[str]:
    rows = class_summary(records)
    if not rows:
        return ["probe: no probe records"]
    out = []
    for r in rows:
        out.append(f"probe: {r['link_class']:5} {format_size(r['nbytes']):>7}: {r['pairs']} pairs, "
                   f"latency {r['latency_us_median']:.3g} us, uni {r['uni_gbps']:.3g} GB/s, "
                   f"bi {r['bi_gbps']:.3g} GB/s (medians over pairs)")
    z = z_for(tests(probe_records(records)))
    found = find(records, threshold, z)
    nodes, links = slow_nodes(found), unexplained_links(found)
    rule = (f"> {threshold:.0%} slower than its class median and beyond z = {z:.2f} times its "
            "noise and the spread between links (docs/probe.md)")
    if not nodes and not links:
        out.append(f"probe: no slow node or link ({rule})")
    for n in nodes:
        what = sorted({f"{o.link_class} {o.measurement} {format_size(o.nbytes)} +{o.excess:.0%}"
                       for o in found if o.what == "node" and o.name == n})
        out.append(f"probe: slow node: {n}: {', '.join(what)}")
    for k in links:
        what = sorted({f"{o.measurement} {format_size(o.nbytes)} +{o.excess:.0%}"
                       for o in found if o.what == "link" and o.name == k})
        out.append(f"probe: slow link: {k} ({', '.join(what)})")
    explained = len({o.name for o in found if o.what == "link" and o.explained_by})
    if explained:
        out.append(f"probe: {explained} slow links more have an end on a slow node")
    if nodes or links:
        out.append(f"probe: rule: {rule}")
    return out
