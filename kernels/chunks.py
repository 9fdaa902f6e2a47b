"""Splitting ``count`` elements into near-equal contiguous chunks (some may be empty)."""

from __future__ import annotations

from kernels.schedule import Range


def split(count: int, parts: int, start: int = 0) -> list[Range]:
    """``parts`` contiguous ranges covering ``[start, start+count)``; the first ``count % parts``
    ranges get one element more. Empty ranges appear when ``count < parts``."""
    base, extra = divmod(count, parts)
    out, pos = [], start
    for i in range(parts):
        n = base + (1 if i < extra else 0)
        out.append(Range(pos, pos + n))
        pos += n
    return out
