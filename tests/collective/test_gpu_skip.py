"""Without a usable GPU: device transports skip with one line saying why, on every rank, while
host transports in the same scenario still run; ``commbench env`` reports the stack. And the
staged bfloat16 baseline's MPI op, which runs on the host, under mpiexec."""

from __future__ import annotations

import json

import pytest
from mpi4py import MPI

from kernels.transports import TRANSPORTS, TransportUnavailable
from kernels.transports.gpu import probe_cupy
from tests.conftest import ROOT, commbench, run_mpi

DEVICE_TRANSPORTS = [n for n in TRANSPORTS.names() if TRANSPORTS.get(n).device]


def _reason() -> str:
    cupy, why = probe_cupy()
    if cupy is not None:
        pytest.skip("a CUDA device is usable here: the skip path is not taken")
    assert why is not None
    return why


def test_probe_reason_is_one_line_and_names_the_cause() -> None:
    why = _reason()
    assert "\n" not in why
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert why.startswith("CuPy missing")
    else:
        assert why == "no CUDA device (cupy.cuda.is_available() is False)"


@pytest.mark.parametrize("name", DEVICE_TRANSPORTS)
def test_factory_raises_the_skip_reason(name: str) -> None:
    why = _reason()
    with pytest.raises(TransportUnavailable) as e:
        TRANSPORTS.get(name).create(MPI.COMM_SELF)
    assert str(e.value) == why


@pytest.mark.mpi
def test_run_skips_device_transports_and_runs_the_host_one(tmp_path) -> None:
    why = _reason()
    sc = tmp_path / "gpu-skip.yaml"
    sc.write_text("transports: [nccl, mpi, mpi-cupy, cuda-ipc]\nworld_sizes: [2]\n"
                  "sizes: [64B]\nalgorithms: [native, ring]\n"
                  "timing: {warmup: 1, iters: 3, repetitions: 1}\n")
    res = commbench("run", str(sc), "--out", str(tmp_path / "run"), "--no-progress", "--no-report")
    assert res.returncode == 0, res.stderr[-2000:]
    for name in ("nccl", "mpi-cupy", "cuda-ipc"):
        assert f"# skipped transport {name}: {why}\n" in res.stdout
    recs = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["transport"], r["algorithm"]) for r in recs) == [("mpi", "native"),
                                                                       ("mpi", "ring")]
    for r in recs:  # host records are as before: no device fields, host timer only
        assert r["wrong"] == 0 and not any(k.startswith(("gpu_mem_", "device_")) for k in r)
        assert "CUDA" not in r["timer"]


@pytest.mark.mpi
def test_staged_bfloat16_allreduce_op_is_exact() -> None:
    res = run_mpi(3, ROOT / "tests" / "mpi" / "gpu_bf16_op.py")
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"sum": 0, "prod": 0, "max": 0,
                                                               "min": 0}


def test_env_reports_the_gpu_stack_as_json() -> None:
    res = commbench("env", "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    facts = json.loads(res.stdout)
    assert list(facts) == ["python", "mpi", "driver", "cupy", "nccl", "torch", "transports",
                           "network", "listening"]
    assert isinstance(facts["mpi"]["cuda_aware"], bool) and facts["mpi"]["cuda_aware_how"]
    assert set(facts["transports"]) == set(DEVICE_TRANSPORTS)
    cupy, why = probe_cupy()
    if cupy is None:
        assert facts["transports"]["mpi-cupy"] == why
