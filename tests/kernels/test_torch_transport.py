"""The torch transport runs every collective and schedule exactly, like the MPI transport: the
same deterministic inputs and exact expected values (bench/measure/data.py), real ranks under mpiexec."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")

from tests.conftest import ROOT, run_mpi  # noqa: E402
from tests.kernels.test_mpi_exact import expected_checks  # noqa: E402


@pytest.mark.mpi
@pytest.mark.slow
def test_torch_transport_runs_every_collective_exactly() -> None:
    """Every collective x algorithm (the vendor calls through torch.distributed included) x dtype
    x op x awkward count at p = 3, through the harness, like the MPI transport's exact test."""
    res = run_mpi(3, ROOT / "tests" / "mpi" / "exact.py", "torch", timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["failures"] == []
    assert out["checks"] == expected_checks(3, "torch")


def test_torch_ops_cover_every_reduce_op() -> None:
    from kernels.ops import OPS
    from kernels.transports.torch_p2p import TORCH_OPS, VENDOR_OPS

    assert set(TORCH_OPS) == set(OPS) == set(VENDOR_OPS)
