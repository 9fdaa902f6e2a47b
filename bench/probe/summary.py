"""The probe's closing lines: per link class, latency and bandwidth; then what each pass found
(:mod:`bench.probe.findings`): the slow nodes and links confirmed when re-measured alone, those
flagged by the tournament but cleared, and those named on the tournament alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.probe.findings import CLEARED, CONFIRMED, Finding, findings
from bench.probe.matrix import class_summary, probe_records
from bench.probe.outliers import tests, z_for
from bench.units import format_size


def _flags(f: Finding) -> str:
    cls = f.what == "node"
    return ", ".join(sorted({(f"{o.link_class} " if cls else "")
                             + f"{o.measurement} {format_size(o.nbytes)} +{o.excess:.0%}"
                             for o in f.flags}))


def _retests(f: Finding) -> str:
    assert f.verdict is not None
    v = f.verdict
    what = ", ".join(f"{t.measurement} {format_size(t.nbytes)} {t.excess:+.0%}"
                     for t in v.retests)
    return f"alone against ranks {v.reference[0]}-{v.reference[1]}: {what}"


def finding_line(f: Finding) -> str:
    if f.status == CLEARED:
        return (f"probe: cleared: {f.name}: flagged in the tournament ({_flags(f)}), not slow "
                f"re-measured {_retests(f)}")
    kind = "slow node" if f.what == "node" else "slow link"
    if f.status == CONFIRMED:
        return f"probe: {kind}: {f.name}: {_flags(f)}; confirmed {_retests(f)}"
    if f.confirming:
        return (f"probe: flagged, not re-measured (over the pass's limit, or no reference pair): "
                f"{f.name}: {_flags(f)}")
    return f"probe: {kind}: {f.name}: {_flags(f)} (tournament only: no confirmation pass)"


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
    found = findings(records, threshold, z)
    rule = (f"> {threshold:.0%} slower than its class median and beyond z = {z:.2f} times its "
            "noise and the spread between links, then slow again re-measured alone against a "
            "reference pair (docs/probe.md)")
    out += [finding_line(f) for f in found]
    explained = len({k for f in found if f.named for k in f.explained})
    if explained:
        out.append(f"probe: {explained} slow links more have an end on a slow node")
    named = [f for f in found if f.named]
    if not named:
        n, cleared = len(found), sum(f.status == CLEARED for f in found)
        what = (f" ({n} flagged in the tournament, {cleared} cleared when re-measured alone)"
                if found else "")
        out.append(f"probe: no slow node or link{what} ({rule})")
    else:
        out.append(f"probe: rule: {rule}")
    return out
