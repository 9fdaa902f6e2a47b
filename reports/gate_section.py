"""The regression gate's verdict as a report section (``commbench compare --html``)."""

from __future__ import annotations

from typing import Any

from bench.gate.compare import GateResult
from bench.gate.keys import describe
from bench.gate.table import ORDER, RANK, verdict
from reports.sections import Section


def gate_rows(res: GateResult) -> dict[str, Any]:
    """The context of ``gate_rows.html.j2``: a row per key, failing first, and the counts."""
    rows = []
    for r in sorted(res.rows, key=lambda r: RANK.get(r.outcome, len(ORDER))):
        d = r.decision
        rows.append({"outcome": r.outcome, "failing": r.failing, "key": describe(r.key),
                     "base": r.base_median, "cur": r.cur_median,
                     "ratio": d.ratio if d else None, "low": d.low if d else None,
                     "high": d.high if d else None, "p": d.p_slower if d else None,
                     "need": d.needed if d else None,
                     "detail": r.detail})
    return {"passed": res.exit_code == 0, "failures": len(res.failures), "total": len(res.rows),
            "undecided": len(res.undecided),
            "counts": [(o, res.count(o)) for o in ORDER if res.count(o)], "rows": rows}


def gate_section(res: GateResult) -> Section:
    return Section("gate", "Regression gate", "gate.html.j2", {
        **gate_rows(res), "base_label": "baseline", "cur_label": "current",
        "baseline": res.baseline, "baselines": len(res.baselines), "current": str(res.current),
        "rule": res.rule, "verdict": verdict(res)})
