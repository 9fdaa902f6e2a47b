"""Deterministic input data and the exact expected AllReduce result.

Inputs are small integers, so every reduction order gives the same value in every dtype as long
as partial results stay exactly representable: |partial sum| <= 7p, products are +-2. The
expected value has a closed form (no need to generate the other ranks' inputs), so checking costs
O(count) per rank at any scale. Where 7p exceeds the dtype's exact-integer range (float16 beyond
p = 292, bfloat16 beyond p = 36) the check uses a relative tolerance and says so.
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 20  # elements checked per slice, to bound temporary memory on 1 GiB buffers
EXACT_INT = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**53}


def _a(i: np.ndarray) -> np.ndarray:
    return (i % 7) - 3


def _b(r: np.ndarray | int) -> np.ndarray | int:
    return (3 * r) % 5


def fill(rank: int, world: int, count: int, op: str, start: int = 0) -> np.ndarray:
    """Rank ``rank``'s input for elements ``start .. start+count-1``, as int64."""
    i = np.arange(start, start + count, dtype=np.int64)
    if op == "prod":
        sign = np.where((rank + i) % 3 == 0, -1, 1)
        mag = np.where(i % world == rank, 2, 1)
        return sign * mag
    return _a(i) + _b(rank)


def expected(world: int, count: int, op: str, start: int = 0) -> np.ndarray:
    """The AllReduce of every rank's :func:`fill`, as int64."""
    i = np.arange(start, start + count, dtype=np.int64)
    ranks = np.arange(world, dtype=np.int64)
    if op == "prod":
        c = (-i) % 3  # ranks r with (r + i) % 3 == 0 are r = c, c+3, ...
        negatives = np.where(c < world, (world - c + 2) // 3, 0)
        return 2 * np.where(negatives % 2, -1, 1)
    b = _b(ranks)
    reducers = {"sum": world * _a(i) + int(b.sum()), "max": _a(i) + int(b.max()),
                "min": _a(i) + int(b.min())}
    return reducers[op]


def tolerance(world: int, dtype: str) -> float:
    """Relative tolerance of the check: 0 (exact) unless partial sums leave the exact range."""
    limit = EXACT_INT.get(dtype)
    if limit is None or 7 * world <= limit:
        return 0.0
    eps = float(np.finfo(dtype).eps) if dtype != "bfloat16" else 2.0**-7
    return eps * world


def count_wrong(host: np.ndarray, world: int, op: str, dtype: str) -> int:
    """Elements of ``host`` (this rank's result) that differ from the exact expectation."""
    tol = tolerance(world, dtype) if op == "sum" else 0.0
    wrong = 0
    for start in range(0, host.size, BLOCK):
        got = host[start : start + BLOCK]
        want = expected(world, got.size, op, start)
        if tol:
            ok = np.isclose(got.astype(np.float64), want, rtol=tol, atol=0)
        else:
            ok = got == want.astype(got.dtype)
        wrong += int(got.size - np.count_nonzero(ok))
    return wrong
