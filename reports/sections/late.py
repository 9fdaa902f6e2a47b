"""Late ranks, hangs and floors: ranks consistently last in a case, what each rank did when a job
hung, and the cases below their floors."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bench.measure import floors
from bench.measure.attribution import LATE_SHARE, describe
from reports.data import ReportData, Run
from reports.sections import Options, Section, section

SOURCE = """\
{% if ctx.below %}
<p class="note">Cases below their floors (the scenario's <code>expect:</code>):</p>
<ul>{% for b in ctx.below %}<li>{{ b }}</li>{% endfor %}</ul>
{% endif %}
{% if ctx.hangs %}
<p class="note">Hangs: which ranks never arrived, and where each live rank waited.</p>
<ul>{% for h in ctx.hangs %}<li><b>{{ h.run }}</b>: case '{{ h.case }}' {{ h.why }}</li>{% endfor %}</ul>
{% endif %}
{% if ctx.rows %}
<p class="note">A rank (or host) is named when it was the last to arrive at, or to finish, the
call in at least {{ ctx.share }} % of a case's iterations by a clear margin (each rank's wait in
the iteration's barrier and its own time, on its own clock: docs/measuring.md).</p>
<table class="sortable"><thead><tr><th>run</th><th>kind</th><th>case</th><th>late</th></tr></thead>
<tbody>{% for r in ctx.rows %}<tr><td>{{ r.run }}</td><td>{{ r.kind }}</td><td>{{ r.case }}</td>
<td>{{ r.late }}</td></tr>{% endfor %}</tbody></table>
{% endif %}
"""


def hangs(run: Run) -> list[dict[str, Any]]:
    """The hangs of a run's meta: the user's own job's, and each self-launched job's."""
    m = run.meta
    found = [m["hang"]] if isinstance(m.get("hang"), dict) else []
    found += [j["hang"] for j in m.get("jobs") or [] if isinstance(j, dict)
              and isinstance(j.get("hang"), dict)]
    return [{"run": run.label, "case": h.get("case"), "why": h.get("why")} for h in found]


def rows(df: pd.DataFrame, limit: int) -> list[dict[str, Any]]:
    if "late" not in df.columns:
        return []
    out = []
    for r in df.to_dict("records"):
        for entry in r.get("late") if isinstance(r.get("late"), list) else []:
            case = (f"{r.get('collective')} {r.get('algorithm')} {int(r['nbytes'])} B "
                    f"p={r.get('world_size')}")
            out.append({"run": r["run"], "kind": r["kind"], "case": case,
                        "late": describe(entry, int(r.get("iters") or 0))})
    return out[:limit]


@section("late", 85, reads=("collective", "bringup"))
def build(data: ReportData, opts: Options) -> Section | None:
    found = [h for run in data.runs for h in hangs(run)]
    late = rows(data.frame, opts.max_rows) if not data.frame.empty else []
    below = (floors.failures(data.frame.to_dict("records"))[:opts.max_rows]
             if "floor" in data.frame.columns else [])
    if not found and not late and not below:
        return None
    return Section("late", "Late ranks, hangs and floors", "",
                   {"hangs": found, "rows": late, "below": below,
                    "share": round(100 * LATE_SHARE)}, source=SOURCE)
