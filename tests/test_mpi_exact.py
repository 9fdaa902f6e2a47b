"""Exact AllReduce results on real ranks under mpiexec (oversubscribed is fine)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, run_mpi

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8])
def test_every_algorithm_dtype_op_count_is_exact(p: int) -> None:
    rpn = 2 if p % 2 == 0 and p > 2 else 0  # virtual nodes make hierarchical cross nodes
    res = run_mpi(p, ROOT / "tests" / "mpi" / "exact.py", "mpi", str(rpn))
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["world"] == p
    assert out["checks"] == len({1, max(1, p - 1), p + 1, 100_003}) * 5 * 4 * 6
    assert out["failures"] == []
