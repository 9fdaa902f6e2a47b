"""Late ranks over a whole job or run: each record names the ranks (else hosts) consistently last
in its case (:mod:`bench.measure.attribution`); this folds them into one entry per rank and
moment, so the terminal says it in one line per job and the report in one table."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from bench.measure.attribution import AT

# A rank named late by a median margin under this many µs is left out of the summaries: below
# it, the margin is the size of a barrier's own exit skew between ranks, not a slow rank or link.
LATE_MIN_US = 10.0


def summarize(records: Iterable[Mapping[str, Any]], min_us: float = LATE_MIN_US
              ) -> list[dict[str, Any]]:
    """One entry per (rank or host, arrival or finish) named late by at least ``min_us``: in how
    many cases (of how many measured), the median and largest margin (µs), its worst case."""
    cases = 0
    found: dict[tuple[str, Any, str], list[tuple[float, str]]] = {}
    for rec in records:
        cases += 1
        for e in rec.get("late") or []:
            if float(e.get("margin_us") or 0.0) < min_us:
                continue
            key = (str(e.get("at")), e.get("rank"), str(e.get("host")))
            case = (f"{rec.get('collective')} {rec.get('algorithm')} {rec.get('nbytes')} B "
                    f"p={rec.get('world_size')}")
            found.setdefault(key, []).append((float(e["margin_us"]), case))
    out = []
    for (at, rank, host), hits in sorted(found.items(), key=lambda kv: -len(kv[1])):
        margins = [m for m, _ in hits]
        out.append({"who": f"rank {rank} on {host}" if rank is not None else f"host {host}",
                    "at": AT.get(at, at), "cases": len(hits), "of": cases,
                    "median_us": statistics.median(margins), "max_us": max(margins),
                    "worst": max(hits)[1]})
    return out


def line(summary: list[dict[str, Any]], min_us: float = LATE_MIN_US) -> str | None:
    """The terminal's one line for a job (None: nobody late by ``min_us`` or more)."""
    if not summary:
        return None
    parts = [f"{s['who']} {s['at']} last in {s['cases']} of {s['of']} cases (median "
             f"{_us(s['median_us'])}, at most {_us(s['max_us'])})" for s in summary]
    return f"late ranks (by >= {min_us:g} µs): " + "; ".join(parts) + " (report: Late ranks)"


def _us(x: float) -> str:
    return f"{x:.3g} µs" if x < 1000 else f"{x:,.0f} µs"
