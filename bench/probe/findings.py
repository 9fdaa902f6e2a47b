"""Both passes together: each node or link the tournament flagged, and what the confirmation
pass made of it (what the closing lines and the report show).

A finding is **confirmed** (slow again, measured alone against a reference: named slow),
**cleared** (not slow alone: a stall or a busy moment in the tournament) or **not re-measured**
(over the pass's limit, or no reference pair: listed as flagged, not named slow). A run without
a confirmation pass (``confirm_max: 0``, or older records) names what the tournament flagged, as
the tournament alone. Slow links with an end on a slow node go with that node (``explained``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.probe.outliers import Outlier, find
from bench.probe.verdict import Verdict, confirm_records, decide

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
    confirming = bool(confirm_records(records))
    flags: dict[tuple[str, str], list[Outlier]] = {}
    for o in found:
        if o.what == "node" or not o.explained_by:
            flags.setdefault((o.what, o.name), []).append(o)
    return [Finding(name, what, tuple(os), verdicts.get(name),
                    tuple(dict.fromkeys(o.name for o in found if o.explained_by == name)),
                    confirming)
            for (what, name), os in flags.items()]
