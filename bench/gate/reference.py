"""Samples relative to ``native`` measured beside them, block by block (docs/compare.md,
``--relative``)."""

from __future__ import annotations

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
