"""Deterministic input data and the exact expected output of any collective, both closed forms of
(rank, index), so checking costs O(elements) per rank at any scale. docs/measuring.md, "The exact
check" (why the values stay exact, and where a tolerance is used)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kernels.collective import Collective

BLOCK = 1 << 20  # elements checked per slice, to bound temporary memory on 1 GiB buffers
EXACT_INT = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**53}


def _a(i: np.ndarray) -> np.ndarray:
    return (i % 7) - 3


def _b(r: np.ndarray | int) -> np.ndarray | int:
    return (3 * r) % 5


NONE = "none"  # the op of collectives that do not reduce


def values_at(rank: np.ndarray | int, i: np.ndarray, world: int, op: str) -> np.ndarray:
    """Input element ``i`` of rank ``rank`` (arrays broadcast), as int64."""
    if op == NONE:
        return (37 * np.asarray(rank, dtype=np.int64) + 11 * i) % 251 - 125
    if op == "prod":
        sign = np.where((rank + i) % 3 == 0, -1, 1)
        mag = np.where(i % world == rank, 2, 1)
        return sign * mag
    return _a(i) + _b(rank)


def fill(rank: int, world: int, count: int, op: str, start: int = 0) -> np.ndarray:
    """Rank ``rank``'s input for elements ``start .. start+count-1``, as int64."""
    return values_at(rank, np.arange(start, start + count, dtype=np.int64), world, op)


def reduced_at(i: np.ndarray, world: int, op: str) -> np.ndarray:
    """The reduction over every rank of input element ``i``, as int64."""
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


def _mismatches(got: np.ndarray, want: np.ndarray, tol: float) -> int:
    """Elements of ``got`` that differ from the int64 ``want`` (relatively by ``tol`` when set)."""
    ok = (np.isclose(got.astype(np.float64), want, rtol=tol, atol=0) if tol
          else got == want.astype(got.dtype))
    return int(want.size - np.count_nonzero(ok))


def expected_blocks(spec: Collective, n: int, world: int, rank: int, root: int,
                    op: str) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, values)`` slices of this rank's exact expected output (int64), BLOCK at a time;
    nothing where the rank has no output."""
    if not spec.has_output(rank, root):
        return
    out = spec.layout(n, world, rank, root).out
    total = out.size if out is not None else 0
    for start in range(0, total, BLOCK):
        res = spec.result(n, world, rank, root, start, min(total, start + BLOCK))
        if res.source is None:
            yield start, reduced_at(res.index, world, op)
        else:
            yield start, values_at(res.source, res.index, world, op)


def count_wrong_output(host_out: np.ndarray | None, spec: Collective, n: int, world: int,
                       rank: int, root: int, op: str, dtype: str) -> int:
    """Elements of this rank's output that differ from the exact expectation (0 where the rank
    has no output)."""
    if host_out is None:
        return 0
    tol = tolerance(world, dtype) if op == "sum" else 0.0
    return sum(_mismatches(host_out[start : start + want.size], want, tol)
               for start, want in expected_blocks(spec, n, world, rank, root, op))
