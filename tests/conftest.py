"""Shared test helpers: running commbench and Python snippets under the embedded mpiexec."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def mpiexec() -> str:
    cand = Path(sys.executable).parent / "mpiexec"
    if not cand.exists():
        pytest.skip("no mpiexec next to the interpreter (install the mpich wheel)")
    return str(cand)


def clean_env() -> dict[str, str]:
    """The environment without MPI markers, so child commbench processes self-launch."""
    drop = ("PMI_", "PMIX_", "OMPI_", "MPI_LOCALRANKID", "COMMBENCH_WORKER", "HYDRA_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_mpi(n: int, script: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [mpiexec(), "-n", str(n), "-launcher", "fork", "-hosts", "localhost",
           sys.executable, str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_env(),
                          cwd=ROOT)


def commbench(*args: str, timeout: float = 240, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(), cwd=cwd)
