"""A run's closing line: ok or failed, how many cases, how many measured with more
ranks than cores, and whether the drift canary saw the machine change speed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def line(status: str, records: Iterable[Mapping[str, Any]], drift: list[str]) -> str:
    """``# ok: ...`` or ``# failed: ...`` in one line (``drift``: the canary's lines); why a run
    failed is said by the lines before it."""
    recs = list(records)
    over = sum(1 for r in recs if r.get("oversubscribed"))
    parts = [f"{len(recs)} case{'s' if len(recs) != 1 else ''} recorded"]
    if over:
        parts.append(f"{over} oversubscribed (ranks outnumber cores: noisy)")
    moved = ", ".join(d.split(":")[0] for d in drift)
    parts.append(f"canary: the machine changed speed ({moved}): compare within this run"
                 if drift else "canary: steady")
    return f"# {status}: " + "; ".join(parts)


def of_run(run_dir: Path, info: Mapping[str, Any]) -> str:
    """:func:`line` for ``run_dir`` as ``info`` (its meta) ends it."""
    from bench.measure import canary
    from bench.store.records import iter_records

    recs = iter_records(run_dir, samples=False, on_bad=lambda *_: None)
    return line(str(info.get("status") or "?"), recs, canary.assess(canary.read(run_dir)))
