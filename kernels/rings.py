"""Ring phases shared by ``ring`` and ``hierarchical`` (not an algorithm of its own)."""

from __future__ import annotations

from collections.abc import Sequence

from kernels.schedule import Range, StepBuilder


def reduce_scatter(
    b: StepBuilder, members: Sequence[int], chunks: Sequence[Range], steps: Sequence[int]
) -> None:
    """In ``len(members)-1`` steps, member ``i`` ends owning chunk ``(i+1) % m`` fully reduced.

    Step ``s``: member ``i`` sends chunk ``(i-s) % m`` to member ``i+1``, which reduces it in.
    """
    m = len(members)
    for s, st in zip(range(m - 1), steps):
        for i, r in enumerate(members):
            b.move(r, members[(i + 1) % m], chunks[(i - s) % m], reduce=True, step=st)


def all_gather(
    b: StepBuilder, members: Sequence[int], chunks: Sequence[Range], steps: Sequence[int]
) -> None:
    """Inverse of :func:`reduce_scatter`'s ownership: member ``i`` starts owning chunk
    ``(i+1) % m``; after ``m-1`` copy steps every member holds every chunk."""
    m = len(members)
    for s, st in zip(range(m - 1), steps):
        for i, r in enumerate(members):
            b.move(r, members[(i + 1) % m], chunks[(i + 1 - s) % m], reduce=False, step=st)


def open_steps(b: StepBuilder, n: int) -> list[int]:
    return [b.step() for _ in range(n)]
