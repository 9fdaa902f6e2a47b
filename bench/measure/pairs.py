"""Rounds of disjoint pairs, the one pairing of the probe (ranks) and bring-up (hosts): a
round-robin tournament (the circle method, a bye per round for odd p), so every pair meets
exactly once and a round's pairs are disjoint (they run at once)."""

from __future__ import annotations

Pair = tuple[int, int]  # (lower rank, higher rank)


def rounds(p: int) -> list[list[Pair]]:
    """The rounds for ``p`` ranks; every pair ``(a, b)`` has ``a < b``."""
    if p < 2:
        raise ValueError(f"a probe needs at least 2 ranks (one pair), got {p}")
    n = p if p % 2 == 0 else p + 1  # with a phantom rank n-1 = p when p is odd
    fixed, ring = n - 1, n - 1
    out: list[list[Pair]] = []
    for r in range(n - 1):
        pairs = [(r, fixed)] + [((r + k) % ring, (r - k) % ring) for k in range(1, n // 2)]
        out.append(sorted((min(a, b), max(a, b)) for a, b in pairs if a < p and b < p))
    return out


def peer_in(pairs: list[Pair], rank: int) -> int | None:
    """``rank``'s partner in a round, or None when it sits the round out."""
    for a, b in pairs:
        if rank in (a, b):
            return b if rank == a else a
    return None
