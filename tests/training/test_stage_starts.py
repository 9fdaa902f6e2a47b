"""The pipeline's balanced cut (bench.training.stages.stage_starts), computed bottom up over
all start pieces at once, equals its definition as a plain recursion, ties included (equal
transformer layers tie everywhere). Exact integers only."""

from __future__ import annotations

import functools
import random

import pytest

from bench.training.stages import stage_starts


def _recursive(sizes: tuple[int, ...], stages: int) -> tuple[int, ...]:
    """The definition: split sizes[i:] into k groups at the first j minimising
    max(sum of sizes[i:j], the best split of sizes[j:] into k - 1)."""
    n, prefix = len(sizes), [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    @functools.cache
    def best(i: int, k: int) -> tuple[int, tuple[int, ...]]:
        if k == 1:
            return prefix[n] - prefix[i], (i,)
        out = min((max(prefix[j] - prefix[i], best(j, k - 1)[0]), j)
                   for j in range(i + 1, n - k + 2))  # the first j of the least maximum
        return out[0], (i, *best(out[1], k - 1)[1])

    return (*best(0, stages)[1], n)


def test_equals_the_recursive_definition() -> None:
    rng = random.Random(25)
    cases = [(5, *([7] * 10), 3), tuple([100_000_123] + [1_812_234_240] * 40 + [700_000_000])]
    cases += [tuple(rng.choice((1, 2, 3)) for _ in range(rng.randint(1, 12))) for _ in range(150)]
    cases += [tuple(rng.randint(1, 10**9) for _ in range(rng.randint(1, 12))) for _ in range(50)]
    for sizes in cases:
        for k in range(1, len(sizes) + 1):
            got = stage_starts(sizes, k)
            assert got == _recursive(sizes, k), (sizes, k)
            assert all(type(x) is int for x in got)


def test_more_stages_than_pieces_is_refused() -> None:
    with pytest.raises(ValueError, match="3 pieces cannot make 4 stages"):
        stage_starts((1, 2, 3), 4)
