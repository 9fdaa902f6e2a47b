"""Nothing measured is a failure: a run whose every case was skipped ends failed (exit 1) with its
reason in one line, ``--allow-empty`` accepts it, and a device-only scenario on a host without a
GPU is refused in one line before anything launches (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.measure import skips
from bench.store.meta import visible_gpu_count
from tests.conftest import ROOT, clean_env, commbench

NCCL = ["run", "-c", "all_reduce", "-b", "8", "-e", "1K", "-t", "nccl"]
no_gpu = pytest.mark.skipif(visible_gpu_count() > 0, reason="a GPU is visible: nccl would run")


def test_reasons_are_kept_once_and_the_first_is_said(tmp_path: Path) -> None:
    assert skips.empty_reason(tmp_path) == ("nothing measured: every case was skipped; "
                                            "--allow-empty accepts an empty run")
    for line in ("transport nccl: no CUDA device", "transport nccl: no CUDA device", "other"):
        skips.note(tmp_path, line)
    assert skips.reasons(tmp_path) == ["transport nccl: no CUDA device", "other"]
    assert skips.empty_reason(tmp_path) == (
        f"nothing measured: transport nccl: no CUDA device (and 1 more in "
        f"{tmp_path / 'skipped.txt'}); --allow-empty accepts an empty run")


def test_only_device_transports_without_a_gpu_are_refused() -> None:
    assert skips.device_only_without_gpu(["nccl"], 0) is not None
    assert skips.device_only_without_gpu(["nccl", "mpi-cupy"], 0) is not None
    assert skips.device_only_without_gpu(["nccl"], 1) is None
    assert skips.device_only_without_gpu(["nccl", "mpi"], 0) is None
    assert skips.device_only_without_gpu([], 0) is None


@no_gpu
def test_nccl_without_a_gpu_is_one_line_exit_2(tmp_path: Path) -> None:
    res = commbench(*NCCL, "--out", str(tmp_path / "r"))
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        "commbench: nothing to measure: transport nccl needs a GPU and none is visible here "
        "(nvidia-smi, CUDA_VISIBLE_DEVICES); -t mpi runs on the CPU, --allow-empty runs anyway"]
    assert not (tmp_path / "r").exists()


@no_gpu
@pytest.mark.mpi
def test_a_run_that_measured_nothing_fails_unless_allowed(tmp_path: Path) -> None:
    # CUDA_VISIBLE_DEVICES=0 gets past the check before launch; the rank then finds no device
    env = {**clean_env(), "CUDA_VISIBLE_DEVICES": "0"}
    argv = [sys.executable, "-m", "bench", *NCCL, "-n", "1", "--no-report", "--no-progress"]
    res = subprocess.run([*argv, "--out", str(tmp_path / "a")], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=240)
    assert res.returncode == 1, res.stderr[-2000:]
    last = res.stderr.splitlines()[-2]
    # (what the drift canary saw is measured: the line's words before it are decided)
    assert res.stderr.splitlines()[-1].startswith("# failed: 0 cases recorded; canary: ")
    assert last.startswith("commbench: nothing measured: transport nccl: ")
    assert last.endswith("; --allow-empty accepts an empty run")
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["reason"] == last.removeprefix("commbench: ")
    ok = subprocess.run([*argv, "--allow-empty", "--out", str(tmp_path / "b")],
                        capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["status"] == "ok"
