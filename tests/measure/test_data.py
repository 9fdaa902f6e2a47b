"""The closed-form expected values equal a brute-force reduction of every rank's input."""

from __future__ import annotations

import numpy as np
import pytest

from bench.measure import data
from kernels.collective import resolve

REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("op", list(REDUCE))
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 13, 64])
def test_expected_is_the_reduction_of_the_fills(op: str, p: int) -> None:
    count = 3 * p + 11
    brute = REDUCE[op].reduce([data.fill(r, p, count, op) for r in range(p)])
    assert np.array_equal(data.reduced_at(np.arange(count), p, op), brute)
    assert np.array_equal(data.reduced_at(np.arange(7, 12), p, op), brute[7:12])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_count_wrong_counts_each_bad_element(dtype: str) -> None:
    p, count = 4, 3_000_000  # spans several check blocks
    good = data.reduced_at(np.arange(count), p, "sum").astype(dtype)
    spec = resolve("all_reduce")
    assert data.count_wrong_output(good, spec, count, p, 0, 0, "sum", dtype) == 0
    good[[0, 1_500_000, count - 1]] += 1
    assert data.count_wrong_output(good, spec, count, p, 0, 0, "sum", dtype) == 3


def test_inputs_stay_exact_in_float16_up_to_292_ranks() -> None:
    assert data.tolerance(292, "float16") == 0.0
    assert data.tolerance(293, "float16") > 0.0
    assert data.tolerance(100_000, "float32") == 0.0
