"""Exact results of every collective and algorithm on real ranks under mpiexec (oversubscribed is
fine), through the harness's own fill, sentinel and check."""

from __future__ import annotations

import json

import pytest

from bench.collective.case import runnable
from kernels import collective as coll
from kernels.algorithm import algorithm_names
from kernels.transports import TRANSPORTS
from tests.conftest import ROOT, run_mpi
from tests.mpi.exact import combos, counts

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("p", [1, 2, 3, *(pytest.param(p, marks=pytest.mark.slow) for p in (4, 7, 8))])
def test_every_algorithm_dtype_op_count_is_exact(p: int) -> None:
    """1-4: every shape the small worlds have (3: an odd remainder of one), every dtype x op;
    7: a remainder of three over a power of two; 8: four virtual nodes (7 and 8: every count and
    algorithm on a sample of dtype x op, ``tests/mpi/exact.py``'s ``combos``). make test-fast
    runs 1-3; 4 (two virtual nodes, where hierarchical first crosses nodes) and up run in make
    test."""
    rpn = 2 if p % 2 == 0 and p > 2 else 0  # virtual nodes make hierarchical cross nodes
    res = run_mpi(p, ROOT / "tests" / "mpi" / "exact.py", "mpi", str(rpn))
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["world"] == p
    assert out["checks"] == expected_checks(p, "mpi")
    assert out["failures"] == []


def expected_checks(p: int, transport: str) -> int:
    """Cases exact.py checks at p ranks on ``transport``: counted from the registries (every
    algorithm, and each vendor call the collective declares for the transport), never typed in."""
    dtypes = TRANSPORTS.get(transport).dtypes
    return sum(len(counts(coll.resolve(c), p)) * len(combos(coll.resolve(c), dtypes, p))
               * len(runnable(coll.resolve(c), transport, tuple(algorithm_names(c)), None))
               for c in coll.names())
