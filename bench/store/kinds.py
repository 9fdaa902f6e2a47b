"""One constructor per record kind, and one for ``meta.json``: each takes by name the fields
every reader of that kind relies on; further fields follow in the order given."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bench.store.records import SCHEMA_VERSION


def collective(*, status: str, collective: str, algorithm: str, transport: str, world_size: int,
               ranks_per_node: int | None, nbytes: int, count: int, dtype: str, op: str,
               **fields: Any) -> dict[str, Any]:
    """A ``collective`` record: one case and its outcome."""
    return {"schema_version": SCHEMA_VERSION, "kind": "collective", "status": status,
            "collective": collective, "algorithm": algorithm, "transport": transport,
            "world_size": world_size, "ranks_per_node": ranks_per_node, "nbytes": nbytes,
            "count": count, "dtype": dtype, "op": op, **fields}


def training(*, status: str, strategy: str, model: str, world_size: int,
             **fields: Any) -> dict[str, Any]:
    """A ``training`` record: one strategy training one model on ``world_size`` ranks."""
    return {"schema_version": SCHEMA_VERSION, "kind": "training", "status": status,
            "strategy": strategy, "model": model, "world_size": world_size, **fields}


def probe(*, src: int, dst: int, world_size: int, nbytes: int, status: str = "ok",
          **fields: Any) -> dict[str, Any]:
    """A ``probe`` record: the pair (src, dst) of a ``world_size``-rank job at one size."""
    return {"schema_version": SCHEMA_VERSION, "kind": "probe", "status": status, "src": src,
            "dst": dst, "world_size": world_size, "nbytes": nbytes, **fields}


def advice(*, predicted: bool, model: str, world_size: int, status: str = "ok",
           **fields: Any) -> dict[str, Any]:
    """An ``advice`` record: a layout of ``model`` priced or checked against a measured run."""
    return {"schema_version": SCHEMA_VERSION, "kind": "advice", "status": status,
            "predicted": predicted, "model": model, "world_size": world_size, **fields}


def overlap(*, status: str, collective: str, algorithm: str, progress: str, world_size: int,
            nbytes: int, **fields: Any) -> dict[str, Any]:
    """An ``overlap`` record: a collective overlapped with compute, progressed by ``progress``."""
    return {"schema_version": SCHEMA_VERSION, "kind": "overlap", "status": status,
            "collective": collective, "algorithm": algorithm, "progress": progress,
            "world_size": world_size, "nbytes": nbytes, **fields}


def now() -> str:
    """The time stamps of ``meta.json`` (``started``, ``finished``): UTC, ISO 8601."""
    return dt.datetime.now(dt.timezone.utc).isoformat()


def meta(*, run_id: str, source: str, scenario: Mapping[str, Any], started: str | None = None,
         **fields: Any) -> dict[str, Any]:
    """A run's ``meta.json``: what made it (``source``), its scenario (at least a ``name``), when
    it started (now unless given) and further fields."""
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "source": source,
            "scenario": dict(scenario), "started": started or now(), **fields}
