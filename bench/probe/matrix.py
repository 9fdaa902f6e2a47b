"""What the probe's records add up to: the node x node matrix and the per-class summary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

CLASS_ORDER = ("intra", "inter", "spine")


def probe_records(records: Sequence[Mapping[str, Any]],
                  confirm: bool = False) -> list[Mapping[str, Any]]:
    """The tournament's records, or (``confirm``) the confirmation pass's: pairs measured alone
    against a reference, read by :mod:`bench.probe.verdict` only."""
    return [r for r in records if r.get("kind") == "probe" and r.get("status", "ok") == "ok"
            and (r.get("phase") == "confirm") == confirm]


def _ints(records: Sequence[Mapping[str, Any]], field: str) -> list[int]:
    """``field`` of each record that has it (a report's frame gives NaN where one does not)."""
    return [int(v) for r in records if (v := r.get(field)) is not None and v == v]


def node_count(records: Sequence[Mapping[str, Any]]) -> int:
    """The probe's nodes: its records' ``nodes`` (the whole layout's), at least those seen."""
    recs = probe_records(records)
    seen = 1 + max((max(int(r["src_node"]), int(r["dst_node"])) for r in recs), default=-1)
    stated = max(_ints(recs, "nodes"), default=0)
    return max(seen, stated)


def missing_pairs(records: Sequence[Mapping[str, Any]], nbytes: int) -> tuple[int, int]:
    """(pairs without a record at ``nbytes``, pairs of the probe): the probe's pairs are every
    pair of its ``world_size`` ranks."""
    recs = probe_records(records)
    world = max(max(_ints(recs, "world_size"), default=0),
                1 + max((int(r["dst"]) for r in recs), default=-1))
    have = {(int(r["src"]), int(r["dst"])) for r in recs if int(r["nbytes"]) == nbytes}
    total = world * (world - 1) // 2
    return total - len(have), total


def node_matrix(records: Sequence[Mapping[str, Any]], field: str, nbytes: int) -> np.ndarray:
    """Nodes x nodes medians of ``field`` at ``nbytes`` (NaN where no pair joins two nodes)."""
    n = node_count(records)
    recs = [r for r in probe_records(records) if int(r["nbytes"]) == nbytes]
    cells: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in recs:
        i, j = sorted((int(r["src_node"]), int(r["dst_node"])))
        cells[(i, j)].append(float(r[field]))
    out = np.full((n, n), np.nan)
    for (i, j), v in cells.items():
        out[i, j] = out[j, i] = float(np.median(v))
    return out


def class_summary(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per link class and size: pairs, and the median, min and max over pairs of each pair's
    median latency (µs) and uni/bi bandwidth (GB/s)."""
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for r in probe_records(records):
        groups[(str(r["link_class"]), int(r["nbytes"]))].append(r)
    out = []
    for (cls, nbytes), rs in sorted(groups.items(), key=lambda kv: (
            CLASS_ORDER.index(kv[0][0]) if kv[0][0] in CLASS_ORDER else 9, kv[0][1])):
        row: dict[str, Any] = {"link_class": cls, "nbytes": nbytes, "pairs": len(rs)}
        for field in ("latency_us_median", "uni_gbps", "bi_gbps"):
            v = np.array([float(r[field]) for r in rs])
            row[field] = float(np.median(v))
            row[field + "_min"], row[field + "_max"] = float(v.min()), float(v.max())
        out.append(row)
    return out
