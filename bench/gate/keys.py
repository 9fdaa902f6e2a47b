"""Cases of two runs matched by key (:data:`KEY`; a field a record lacks is None), with their raw
samples pooled per key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.argtypes import CommbenchError
from bench.store.records import KEY_FIELDS, StoreError, iter_records, read_meta
from kernels.collective import canonical

KEY = (*KEY_FIELDS, "strategy", "model")
# Where each record kind keeps its raw samples, and their unit (lower is better for both).
SAMPLES: Mapping[str, tuple[str, str]] = {"collective": ("samples_us", "µs"),
                                          "training": ("samples_ms", "ms")}
DETERMINISTIC = ("bytes_sent_max", "wrong")

Key = tuple[Any, ...]


class InputError(CommbenchError, ValueError):
    """Runs that cannot be compared (missing, wrong schema, nothing in common); one line."""


@dataclass
class Case:
    key: Key
    kind: str
    statuses: list[str] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    exact: dict[str, set[Any]] = field(default_factory=dict)
    summaries: bool = False  # samples are a tool's summary values, not raw iterations
    blocks: int = 1  # repetition blocks the samples are split into (1 once records are pooled)
    oversubscribed: bool = False  # more ranks than cores: stalls, not code, move the numbers

    @property
    def ok(self) -> bool:
        return bool(self.statuses) and all(s == "ok" for s in self.statuses)

    def array(self) -> np.ndarray:
        return np.asarray(self.samples, dtype=float)


def key_of(rec: Mapping[str, Any]) -> Key:
    """The case's identity; the collective by its canonical name, so a baseline recorded as
    ``allreduce`` matches today's ``all_reduce``."""
    return tuple(canonical(rec.get(f)) if f == "collective" else rec.get(f) for f in KEY)


def describe(key: Key) -> str:
    """A short human name: the fields that are set, in key order."""
    return " ".join(f"{f}={v}" for f, v in zip(KEY, key) if v is not None and f != "kind")


def cases(records: Iterable[Mapping[str, Any]]) -> dict[Key, Case]:
    out: dict[Key, Case] = {}
    for rec in records:
        k = key_of(rec)
        kind = str(rec.get("kind", "collective"))
        c = out.setdefault(k, Case(k, kind))
        c.blocks = int(rec.get("repetitions") or 1) if not c.statuses else 1
        c.statuses.append(str(rec.get("status", "ok")))
        c.oversubscribed |= bool(rec.get("oversubscribed"))
        col = SAMPLES.get(kind, ("samples_us", ""))[0]
        samples = rec.get(col) or []
        c.samples.extend(float(x) for x in samples if x is not None)
        c.summaries |= bool(rec.get("samples_are_summaries"))
        for f in DETERMINISTIC:
            if f in rec:
                c.exact.setdefault(f, set()).add(rec[f])
    return out


def pooled(runs: Sequence[Mapping[Key, Case]]) -> dict[Key, Case]:
    """Several runs' cases as one (``blocks == 1``: other runs' blocks are not repetition blocks)."""
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[Key, Case] = {}
    for run in runs:
        for k, c in run.items():
            p = out.setdefault(k, Case(k, c.kind))
            p.statuses += c.statuses
            p.samples += c.samples
            for f, vals in c.exact.items():
                p.exact.setdefault(f, set()).update(vals)
            p.summaries |= c.summaries
            p.oversubscribed |= c.oversubscribed
    return out


def _no_duplicates(run_dir: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a collective case recorded twice in one run (ab's rounds are distinct); it has no
    single answer."""
    seen: set[tuple[Key, Any]] = set()
    dups: list[Key] = []
    for rec in records:
        if rec.get("kind", "collective") != "collective":
            continue  # a training scenario may list a strategy twice on purpose (A/B/A/B)
        k = (key_of(rec), rec.get("round"))
        if k in seen:
            dups.append(k[0])
        seen.add(k)
    if dups:
        raise InputError(f"{run_dir}: {len(dups)} case(s) recorded more than once, e.g. "
                         f"{describe(dups[0])}; one run directory per run (or --resume)")


def load_cases(run_dir: Path) -> tuple[dict[str, Any], dict[Key, Case]]:
    """``meta.json`` and the cases of one run; :class:`InputError` when unusable."""
    if not Path(run_dir).is_dir():
        raise InputError(f"{run_dir}: no such run directory")
    try:
        meta = read_meta(Path(run_dir))
        records = list(iter_records(Path(run_dir)))
    except StoreError as e:
        raise InputError(str(e)) from None
    if any(r.get("kind") == "probe" for r in records):
        raise InputError(f"{run_dir}: a link probe run; compare reads collective and training "
                         "runs (a probe's pairs have no key here): compare probes side by side "
                         "with `commbench report A B`")
    _no_duplicates(run_dir, records)
    found = cases(records)
    if not found:
        raise InputError(f"{run_dir}: no records in results.jsonl")
    return meta, found
