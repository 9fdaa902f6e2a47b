"""What both passes found (confirmed, cleared or not re-measured), and the probe's closing lines;
the report shows the same findings. docs/probe.md, "The confirmation pass"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.probe.matrix import class_summary, probe_records
from bench.probe.outliers import Outlier, find, flagged, tests, z_for
from bench.probe.verdict import Verdict, decide, retests_text
from bench.units import format_size

CONFIRMED, CLEARED, NOT_REMEASURED = "confirmed", "cleared", "not re-measured"


@dataclass(frozen=True)
class Finding:
    name: str
    what: str  # node | link
    flags: tuple[Outlier, ...]  # the tournament's, per class, measurement and size
    verdict: Verdict | None  # the confirmation pass's, if it re-measured this one
    explained: tuple[str, ...] = ()  # a node: the slow links with an end on it
    confirming: bool = True  # whether the run had a confirmation pass

    @property
    def status(self) -> str:
        if self.verdict is None:
            return NOT_REMEASURED
        return CONFIRMED if self.verdict.confirmed else CLEARED

    @property
    def named(self) -> bool:
        """Reported slow: confirmed, or flagged in a run without a confirmation pass."""
        return self.status == CONFIRMED or (not self.confirming and self.status == NOT_REMEASURED)


def findings(records: Sequence[Mapping[str, Any]], threshold: float,
             z: float | None = None) -> list[Finding]:
    """Nodes, then unexplained links, in the tournament's order (:func:`find`)."""
    found = find(records, threshold, z)
    verdicts = {v.name: v for v in decide(records, threshold)}
    confirming = bool(probe_records(records, confirm=True))
    return [Finding(name, what, tuple(os), verdicts.get(name),
                    tuple(dict.fromkeys(o.name for o in found if o.explained_by == name)),
                    confirming)
            for (what, name), os in flagged(found).items()]


def _flags(f: Finding) -> str:
    cls = f.what == "node"
    return ", ".join(sorted({(f"{o.link_class} " if cls else "")
                             + f"{o.measurement} {format_size(o.nbytes)} +{o.excess:.0%}"
                             for o in f.flags}))


def _retests(f: Finding) -> str:
    assert f.verdict is not None
    (a, b), what = f.verdict.reference, retests_text(f.verdict.retests)
    return f"alone against ranks {a}-{b}: {what}"


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
