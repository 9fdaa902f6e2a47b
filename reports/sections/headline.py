"""The headline, first on the page: per collective (and transport, type, op), the fastest
algorithm at each message-size range at the largest world size measured above 1, its margin over
the vendor call; and the failures, counted."""

from __future__ import annotations

from typing import Any

from reports.aggregate import iter_groups, panel_title
from reports.data import VENDOR, ReportData
from reports.sections import Options, Section, section
from reports.sections.choose import communicating, ranges, winners

SOURCE = """\
<ul class="headline">
{% if ctx.failed %}<li class="bad"><strong>{{ ctx.failed }} of {{ ctx.total }} cases failed</strong>
(<a href="#cases">All cases</a> lists them first).</li>
{% elif ctx.total %}<li>All {{ ctx.total }} cases ok.</li>
{% else %}<li class="bad"><strong>No records</strong>: nothing was measured (the run's
<code>meta.json</code> says why).</li>{% endif %}
{% for r in ctx.rows %}
<li data-collective="{{ r.collective }}"><b>{{ r.title }}</b>, {{ r.world }} ranks
{%- if ctx.several %} [{{ r.run }}]{% endif %}: fastest {{ r.ranges|join("; ") }}.</li>
{% endfor %}
</ul>
{% if ctx.rows %}<p class="note">Fastest: the lowest median time at each size (What to choose has
every world size and the margin over the runner-up; a margin under ~1.05 on a noisy machine is a
tie).</p>{% endif %}
"""


def rows(data: ReportData) -> list[dict[str, Any]]:
    """One entry per run and panel: the winners at its largest world size above 1 (one placement
    of it, the first, where several ranks-per-node were measured)."""
    df = communicating(data.ok_collectives())
    if df.empty:
        return []
    out = []
    keys = ("run", "collective", "transport", "dtype", "op")
    for (run, coll, transport, dtype, op), g in iter_groups(df, keys):
        top = g[g["world_size"] == g["world_size"].max()]
        per_size = winners(top)
        first = per_size[per_size["ranks_per_node"] == per_size["ranks_per_node"].iloc[0]]
        out.append({"run": run, "collective": coll, "world": int(first["world_size"].iloc[0]),
                    "title": panel_title((coll, transport, dtype, op)),
                    "ranges": [_said(p) for p in ranges(first)]})
    return out


def _said(p: dict[str, Any]) -> str:
    """One range in words: "ring at 64KiB – 16MiB (1.2–1.5× native)"."""
    lo, hi = p["native_lo"], p["native_hi"]
    if lo is None or p["best"] == VENDOR:
        return f"{p['best']} at {p['range']}"
    margin = f"{lo:.3g}" if lo == hi else f"{lo:.3g}–{hi:.3g}"
    return f"{p['best']} at {p['range']} ({margin}× native)"


@section("headline", 1, reads=("collective",))
def build(data: ReportData, opts: Options) -> Section:
    frame = data.frame
    return Section("headline", "Headline", "", {
        "rows": rows(data), "total": len(frame), "failed": len(data.failed()),
        "several": len(data.runs) > 1}, source=SOURCE)
