"""Shared test helpers: running commbench and Python snippets under the embedded mpiexec."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent


# Property tests draw the same examples on every run and hold no example to a clock: a pass/fail
# test must not depend on chance or on the machine's speed (a random draw that finds a slow
# input, then shrinks it for minutes, is neither). Exploring new inputs is a fuzzing session's job:
# HYPOTHESIS_PROFILE=explore draws at random and keeps a database.
settings.register_profile("suite", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def mpiexec() -> str:
    cand = Path(sys.executable).parent / "mpiexec"
    if not cand.exists():
        pytest.skip("no mpiexec next to the interpreter (install the mpich wheel)")
    return str(cand)


# Two test workers run jobs side by side on a 2-core machine, so a 2-rank job that fits the cores
# by itself shares them with the other worker's ranks. At commbench's default thread level
# (``funneled`` while a job's ranks fit the cores, bench/launch/threadlevel.py) MPICH's waiting
# ranks spin without yielding, and oversubscribed they starve each other for whole scheduler
# slices (a 1 MiB all_reduce at p = 3 on 2 cores: seconds per call instead of milliseconds). So
# the suite's jobs ask for ``multiple`` (MPICH then yields while it waits), as a user may; the
# tests of the default level itself and of the watchdog's funneled path use default_env().
THREAD_LEVEL = {"MPI4PY_RC_THREAD_LEVEL": "multiple"}


def pytest_configure(config: pytest.Config) -> None:
    """Every MPICH rank the suite starts sleeps a microsecond between polls that find nothing to
    do (``MPIR_CVAR_CH4_PROGRESS_THROTTLE``) instead of spinning: the two workers' jobs together
    outnumber the 2 cores, and spinning ranks take whole scheduler slices from the peers they wait
    for (three 2-rank jobs at once, thread level ``single``: 7.6-15.5 s spinning, 3.8-4.4 s
    throttled). Only the suite's times change: its tests assert results, never durations. A
    user's own setting wins."""
    os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")


def default_env() -> dict[str, str]:
    """The environment without MPI markers (child commbench processes self-launch), the thread
    level left to commbench."""
    drop = ("PMI_", "PMIX_", "OMPI_", "MPI_LOCALRANKID", "COMMBENCH_WORKER", "HYDRA_",
            *THREAD_LEVEL)
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def clean_env() -> dict[str, str]:
    """:func:`default_env` with the suite's thread level (see :data:`THREAD_LEVEL`)."""
    return {**default_env(), **THREAD_LEVEL}


def run_mpi(n: int, script: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [mpiexec(), "-n", str(n), "-launcher", "fork", "-hosts", "localhost",
           sys.executable, str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_env(),
                          cwd=ROOT)


def commbench(*args: str, timeout: float = 240, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(), cwd=cwd)


# One multi-rank training run shared by tests/training/test_training.py and
# tests/advise/test_advise_comm.py (both read its records; the session pays for it once). Every
# strategy the two need, on gpt-tiny and mlp at 4 ranks (every strategy's general shape: hybrid:2
# is 2 x 2, pipelines have inner stages, ZeRO shards 4 ways), with the reference (the loss check)
# and small DDP / ZeRO-1 buckets (the bucket model); plus ps at 3 ranks (ps:1 and ps:2) in a
# second, small launch. Two ranks are trained in tests/training/test_training_options.py and
# tests/training/test_training_pipeline_idle.py.
TRAIN_ALGS = ["ring", "tree", "halving_doubling", "hierarchical", "naive"]
TRAINING_SCENARIO = f"""
name: training-test
kind: training
models: [gpt-tiny, mlp]
strategies: [ddp, ddp:fp16, {", ".join("ddp:" + a for a in TRAIN_ALGS)}, zero1, zero2, zero3,
             tensor, pipeline:gpipe, pipeline:1f1b, pipeline:interleaved, hybrid:2, ps:1,
             {{name: ddp, bucket_mb: 0.02}}, {{name: zero1, bucket_mb: 0.05}}]
world_sizes: [4]
batch_size: 8
steps: 1
warmup: 2
backend: gloo
case_timeout_s: 120
"""
PS_SCENARIO = """
name: training-test-ps
kind: training
models: [gpt-tiny, mlp]
strategies: [ps:1, ps:2]
world_sizes: [3]
batch_size: 8
steps: 1
warmup: 2
backend: gloo
case_timeout_s: 120
"""


@pytest.fixture(scope="session")
def training_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Records of :data:`TRAINING_SCENARIO` and :data:`PS_SCENARIO`, run for real (needs torch;
    only tests marked ``training`` use it). Under xdist (``make test`` runs 2 workers, a file
    each at a time) the first worker that needs it runs it and the other reads its records."""
    pytest.importorskip("torch", reason="training needs torch")
    from bench.store.records import iter_records

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's directory, above each worker's own
    d = shared / "training-records"
    with open(shared / "training-records.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits here for the records
        if not (d / "done").exists():
            d.mkdir(exist_ok=True)
            for name, text in (("main", TRAINING_SCENARIO), ("ps", PS_SCENARIO)):
                shutil.rmtree(d / name, ignore_errors=True)
                (d / f"{name}.yaml").write_text(text)
                proc = subprocess.run([sys.executable, "-m", "bench", "run", str(d / f"{name}.yaml"),
                                       "--out", str(d / name), "--no-progress", "--no-report"],
                                      capture_output=True, text=True, timeout=900, env=clean_env(),
                                      cwd=ROOT)
                assert proc.returncode == 0, proc.stderr[-4000:]
            (d / "done").write_text("")
    return [*iter_records(d / "main"), *iter_records(d / "ps")]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with slow or training tests first, each file's tests in their order: ``make test``
    hands whole files to 2 xdist workers in this order (``--dist loadfile``), so the long ones
    start early instead of leaving one worker alone at the end."""
    heavy = {i.path for i in items if i.get_closest_marker("slow") or i.get_closest_marker("training")}
    items.sort(key=lambda i: i.path not in heavy)
