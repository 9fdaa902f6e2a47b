"""GPU-marked tests: exact results of every collective on device buffers under each device
transport that can run on this machine, and the device pieces checked against their CPU references. They skip,
saying why, without CuPy or a CUDA device (CI never has one). Not yet run on a GPU: no GPU was
available to the session that wrote them; scripts/gpu-check.sh runs them where one is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kernels.transports.gpu import probe_cupy
from kernels.transports.gpu_plan import bf16_reduce_into, f32_to_bf16_bits
from tests.conftest import ROOT, clean_env, run_mpi
from tests.kernels.test_mpi_exact import expected_checks

pytestmark = pytest.mark.gpu


def _cupy():
    cp, why = probe_cupy()
    if cp is None:
        pytest.skip(why or "no CUDA device")
    return cp


def _gpus() -> int:
    return int(_cupy().cuda.runtime.getDeviceCount())


# Open MPI's switches that let mpiexec start as root (GPU machines often run as root); clean_env
# drops every OMPI_ variable, these have to come back for COMMBENCH_MPIEXEC to start at all.
_ROOT_OK = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def _run(p: int, transport: str) -> subprocess.CompletedProcess[str]:
    """Under the mpiexec gpu-check.sh chose (any MPI), else the mpich wheel's (conftest)."""
    script = ROOT / "tests" / "mpi" / "exact.py"
    rpn = "2" if p % 2 == 0 and p > 2 else "0"
    launcher = os.environ.get("COMMBENCH_MPIEXEC")
    if not launcher:
        return run_mpi(p, script, transport, rpn, timeout=280)
    env = {**clean_env(), **{k: os.environ[k] for k in _ROOT_OK if k in os.environ}}
    return subprocess.run([launcher, "-n", str(p), sys.executable, str(script), transport, rpn],
                          capture_output=True, text=True, timeout=280, env=env, cwd=ROOT)


# (transport, world size): nccl needs a GPU per rank; mpi-cupy and cuda-ipc can share one.
CASES = [("nccl", 2), ("nccl", 4), ("nccl-graph", 2), ("mpi-cupy", 2), ("mpi-cupy", 3),
         ("cuda-ipc", 2), ("cuda-ipc", 4)]


@pytest.mark.parametrize("transport,p", CASES)
def test_every_algorithm_dtype_op_is_exact_on_device(transport: str, p: int) -> None:
    if transport.startswith("nccl") and _gpus() < p:
        pytest.skip(f"{transport} at p={p} needs {p} GPUs, {_gpus()} visible")
    _cupy()
    res = _run(p, transport)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if "skipped" in out:
        pytest.skip(f"{transport}: {out['skipped']}")
    assert out["failures"] == []
    assert out["checks"] == expected_checks(p, transport)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_bfloat16_kernel_matches_host_reference(op: str) -> None:
    cp = _cupy()
    from kernels.transports.gpu import reducer

    rng = np.random.default_rng(7)
    a = f32_to_bf16_bits(rng.normal(size=4099).astype(np.float32) * 100)
    b = f32_to_bf16_bits(rng.normal(size=4099).astype(np.float32) * 100)
    dst, src = cp.asarray(a), cp.asarray(b)
    reducer(cp, "bfloat16", op)(dst, src)
    want = a.copy()
    bf16_reduce_into(want, b, op)
    assert np.array_equal(cp.asnumpy(dst), want)


def test_event_clock_times_device_work() -> None:
    cp = _cupy()
    from kernels.transports.gpu import EventClock

    stream = cp.cuda.Stream(non_blocking=True)
    clock = EventClock(cp, stream)
    with stream:  # zeros on the same stream: a non-blocking one is not ordered after the null one
        x = cp.zeros(1 << 24, dtype=cp.float32)
        clock.start()
        for _ in range(10):
            x += 1
        clock.stop()
    assert clock.elapsed_us() > 0
    stream.synchronize()
    assert float(x[0]) == 10.0
