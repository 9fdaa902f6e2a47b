"""The tables of a concurrent run, from its records alone (the report, the benchmark and ``advise
--interference`` read them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.concurrent.define import slowdown

TIME = "time_us_median"  # a group's time: the harness's median over iterations of the slowest rank


@dataclass(frozen=True)
class GroupRow:
    group: str
    members: tuple[int, ...]
    collective: str
    algorithm: str
    nbytes: int
    alone_us: float
    together_us: float
    together_with: tuple[str, ...]
    rounds: int = 1  # rounds that gave both

    @property
    def slowdown(self) -> float:
        return slowdown(self.alone_us, self.together_us)


def _key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (r["group"], tuple(r["members"]), r["collective"], r["algorithm"], int(r["nbytes"]))


def group_rows(records: Iterable[Mapping[str, Any]]) -> list[GroupRow]:
    """One row per communicator and size measured both alone and together (status ok), in the
    order the alone records came; with several rounds, each time the median over rounds."""
    alone: dict[tuple[Any, ...], list[float]] = {}
    together: dict[tuple[Any, ...], list[float]] = {}
    beside: dict[tuple[Any, ...], tuple[str, ...]] = {}
    for r in records:
        if r.get("kind") == "concurrent" and r.get("status") == "ok":
            k = _key(r)
            (together if r["mode"] == "together" else alone).setdefault(k, []).append(
                float(r[TIME]))
            if r["mode"] == "together":
                beside[k] = tuple(r.get("together_with") or ())
    return [GroupRow(*k, float(np.median(a)), float(np.median(together[k])), beside[k],
                     min(len(a), len(together[k])))
            for k, a in alone.items() if k in together]


def slowdowns(rows: Iterable[GroupRow]) -> dict[str, float]:
    """Each group's slowdown beside the others: the largest over its communicators, at the
    largest size measured (the figure a step's time waits for)."""
    rows = list(rows)
    out: dict[str, float] = {}
    for name in dict.fromkeys(r.group for r in rows):
        mine = [r for r in rows if r.group == name]
        top = max(r.nbytes for r in mine)
        out[name] = max(r.slowdown for r in mine if r.nbytes == top)
    return out


def overlap_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The overlap records (status ok) as table rows."""
    keys = ("collective", "algorithm", "progress", "nbytes", "overall_us", "compute_us",
            "comm_us", "overlap_pct", "gemm_n", "progress_how")
    return [{k: r.get(k) for k in keys} for r in records
            if r.get("kind") == "overlap" and r.get("status") == "ok"]
