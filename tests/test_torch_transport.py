"""The torch transport runs every commbench schedule exactly, like the MPI transport: the same
deterministic inputs and exact expected values (bench/data.py), real ranks under mpiexec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")

from bench.records import load_results  # noqa: E402

SCENARIO = """
name: torch-transport
transports: [torch, mpi]
world_sizes: [3]
sizes: [36B, 64KiB]
algorithms: [native, ring, tree, halving_doubling, hierarchical, naive]
dtypes: [float32]
ops: [sum, max]
timing: {warmup: 1, iters: 2, repetitions: 1}
case_timeout_s: 120
"""


@pytest.mark.mpi
def test_torch_transport_exact_like_mpi(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(SCENARIO)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "bench", "run", str(sc), "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = load_results(out)
    per = df.groupby("transport").size()
    assert per["torch"] == per["mpi"] == 2 * 6 * 2
    assert (df["wrong"] == 0).all(), df[df["wrong"] != 0][["transport", "algorithm", "op"]]
    # the schedules move the same bytes whichever transport runs them
    key = ["algorithm", "world_size", "nbytes", "dtype", "op"]
    sent = df[df.algorithm != "native"].pivot_table(index=key, columns="transport",
                                                    values="bytes_sent_max")
    assert (sent["torch"] == sent["mpi"]).all()


def test_torch_ops_cover_every_reduce_op() -> None:
    from kernels.ops import OPS
    from kernels.transports.torch_p2p import TORCH_OPS, VENDOR_OPS

    assert set(TORCH_OPS) == set(OPS) == set(VENDOR_OPS)
