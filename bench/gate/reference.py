"""A key's samples in one run, raw or relative to ``native`` measured beside them, block by block
(docs/compare.md, ``--relative``)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from bench.gate.keys import KEY, Case, Key

REFERENCE = "native"
_ALG = KEY.index("algorithm")


def relative(case: Case, cases: Mapping[Key, Case]) -> np.ndarray | None:
    """``case``'s samples divided block by block by the reference's block medians, or None."""
    if case.kind != "collective" or case.key[_ALG] == REFERENCE:
        return None
    ref = cases.get((*case.key[:_ALG], REFERENCE, *case.key[_ALG + 1:]))
    if ref is None or not ref.ok or not ref.samples or not case.samples:
        return None
    mine, theirs = case.array(), ref.array()
    blocks = case.blocks if case.blocks == ref.blocks and mine.size >= case.blocks else 1
    parts = [m / float(np.median(r))
             for m, r in zip(np.array_split(mine, blocks), np.array_split(theirs, blocks))]
    return np.concatenate(parts)


def values(key: Key, run: Mapping[Key, Case], relative_to: bool = False) -> np.ndarray | None:
    """The key's samples in one run (relative to native with ``relative_to``), or None."""
    case = run.get(key)
    if case is None or not case.ok or not case.samples:
        return None
    rel = relative(case, run) if relative_to else None
    return rel if rel is not None else case.array()


def round_median(key: Key, run: Mapping[Key, Case], relative_to: bool = False) -> float | None:
    v = values(key, run, relative_to)
    med = float(np.median(v)) if v is not None and v.size else math.nan
    return med if med > 0 and math.isfinite(med) else None
