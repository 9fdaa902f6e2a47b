"""What a run was measured on: hosts, CPU, GPUs, MPI, package versions, commit, times."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

PACKAGES = ("commbench", "numpy", "mpi4py", "mpich", "pandas", "pydantic", "torch", "cupy",
            "cupy-cuda12x", "cupy-cuda13x", "matplotlib", "jinja2")


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[str]:
    """GPU names from nvidia-smi, if there is one; [] otherwise (never an error)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []


def visible_gpu_count() -> int:
    """GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else what nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    return len(gpus())


def git_commit(repo: Path) -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def mpi_library() -> dict[str, Any]:
    """The MPI library of this process; initialises MPI (the self-launcher asks a child instead)."""
    from mpi4py import MPI

    from bench.launch.launcher import info_from

    vendor = [str(x) for x in MPI.get_vendor()]
    return info_from(MPI.Get_library_version(), vendor,
                     ".".join(map(str, MPI.Get_version()))).as_meta()


def host_facts() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "cpu": cpu_model(),
        "cores_logical": psutil.cpu_count(logical=True),
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "gpus": gpus(),
    }


def environment(mpi: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a run's ``meta.json`` says of where it ran; ``mpi`` when the caller knows it already."""
    return {
        "host": host_facts(),
        "mpi": mpi if mpi is not None else mpi_library(),
        "packages": package_versions(),
        "commit": git_commit(Path(__file__).resolve().parents[2]),
        "argv": sys.argv,
        "cwd": os.getcwd(),
    }
