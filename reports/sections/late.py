"""Late ranks, hangs and floors: ranks consistently last in a case, what each rank did when a job
hung, and the cases below their floors."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bench.measure import floors
from bench.measure.attribution import LATE_SHARE
from bench.measure.lateness import LATE_MIN_US, summarize
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
<p class="note">A rank (or host) is named in a case when it was the last to arrive at, or to
finish, the call in at least {{ ctx.share }} % of the case's iterations by a clear margin (each
rank's wait in the iteration's barrier and its own time, on its own clock: docs/measuring.md);
one row per rank and moment over the run, margins under {{ ctx.min_us }} µs left out.</p>
<table class="sortable"><thead><tr><th>run</th><th>who</th><th>was last to</th>
<th class="n">cases</th><th class="n">of</th><th class="n">median margin (µs)</th>
<th class="n">largest (µs)</th><th>in</th></tr></thead>
<tbody>{% for r in ctx.rows %}<tr><td>{{ r.run }}</td><td>{{ r.who }}</td>
<td>{{ "arrive" if r.at == "arrived" else "finish" }}</td><td class="n">{{ r.cases }}</td>
<td class="n">{{ r.of }}</td><td class="n" data-v="{{ r.median_us|sortval }}">{{ r.median_us|num }}</td>
<td class="n" data-v="{{ r.max_us|sortval }}">{{ r.max_us|num }}</td><td>{{ r.worst }}</td></tr>
{% endfor %}</tbody></table>
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
    """Per run, one row per rank (or host) and moment it was late at (:func:`summarize`)."""
    if "late" not in df.columns:
        return []
    out = []
    for run, g in df.groupby("run", sort=True):
        recs = [{**r, "late": r["late"] if isinstance(r.get("late"), list) else []}
                for r in g.to_dict("records")]
        out += [{"run": run, **s} for s in summarize(recs)]
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
                    "share": round(100 * LATE_SHARE), "min_us": f"{LATE_MIN_US:g}"},
                   source=SOURCE)
