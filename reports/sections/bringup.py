"""Bring-up: the verdict per host and link (:mod:`bench.bringup.verdict`), then every stage's
cases."""

from __future__ import annotations

from typing import Any

from bench.bringup.scenario import BringupScenario
from bench.bringup.verdict import OK, Verdict, judge
from bench.units import format_size
from reports.data import ReportData, Run
from reports.sections import Options, Section, per_run, section

DEFAULT_SLOW_PCT = BringupScenario.model_fields["slow_pct"].default


def _slow_pct(run: Run) -> float:
    v = run.scenario.get("slow_pct")
    return float(v) if isinstance(v, (int, float)) and 0 < v < 100 else DEFAULT_SLOW_PCT


def _rows(v: Verdict, table: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    out = []
    for name, findings in table.items():
        w = v.worst(findings)
        shown = w or (findings[0] if findings else None)
        out.append({"kind": kind, "name": name,
                    "status": w.status if w else OK if shown else "not judged",
                    "by": w.by_pct if w else None, "stage": shown.stage if shown else "",
                    "evidence": shown.evidence if shown else "nothing to compare it with"})
    return out


def _run(run: Run, opts: Options) -> dict[str, Any] | None:
    df = run.records[run.records["kind"] == "bringup"]
    if df.empty:
        return None
    recs = df.to_dict("records")
    slow = _slow_pct(run)
    v = judge(recs, slow)
    cases = [{"stage": r["stage"], "group": " + ".join(r["group_hosts"]),
              "collective": r["collective"], "algorithm": r["algorithm"],
              "size": format_size(int(r["nbytes"])), "nbytes": int(r["nbytes"]),
              "busbw": r.get("busbw_gbps"), "expected": r.get("expected_busbw_gbps"),
              "pct": r.get("pct_of_expected"), "status": r["status"]} for r in recs]
    return {"label": run.label, "ok": v.ok, "word": v.word, "slow_pct": slow, "lines": v.lines(),
            "rows": _rows(v, dict(v.hosts), "host") + _rows(v, dict(v.links), "link"),
            "cluster": [vars(f) for f in v.cluster], "cases": cases[: opts.max_rows],
            "more": max(0, len(cases) - opts.max_rows)}


@section("bringup", 5, reads=("bringup",))
def build(data: ReportData, opts: Options) -> Section | None:
    return per_run(data, "bringup", "Bring-up verdict", "bringup.html.j2", lambda r: _run(r, opts))
