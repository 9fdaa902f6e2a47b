"""Whether two sides' runs measured the same world sizes, collectives and strategies: else their
keys cannot pair, and ``commbench ab`` refuses them after its first round."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.store.records import StoreError, iter_records
from kernels.collective import canonical

# what a run measured, per field: how one record's value is read
SHAPE = {"world sizes": lambda r: r.get("world_size"),
         "collectives": lambda r: canonical(r.get("collective")) if r.get("collective") else None,
         "strategies": lambda r: r.get("strategy")}


def shape(run: Path) -> dict[str, list[Any]]:
    """The sorted values of each :data:`SHAPE` field over the run's records."""
    try:
        recs = list(iter_records(run))
    except StoreError:
        recs = []
    return {name: sorted({v for r in recs if (v := get(r)) is not None}, key=str)
            for name, get in SHAPE.items()}


def incomparable(runs: Mapping[str, Path]) -> str | None:
    """Why the runs (label -> run directory) cannot be compared key by key, or None."""
    (la, a), (lb, b) = ((label, shape(run)) for label, run in runs.items())
    for name in SHAPE:
        if a[name] != b[name]:
            return (f"{la} and {lb} measured other {name} ({_list(a[name])} vs {_list(b[name])}): "
                    "their keys cannot be compared; make both sides run the same ranks and cases")
    return None


def _list(values: list[Any]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"
