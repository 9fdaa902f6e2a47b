"""`commbench run` end to end: self-launched and inside a user's mpiexec."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.store.records import COLLECTIVE_FIELDS, load_results, read_meta
from tests.conftest import ROOT, clean_env, commbench, mpiexec

pytestmark = pytest.mark.mpi

SCENARIO = """\
name: e2e
world_sizes: [1, 3]
ranks_per_node: [auto]
sizes: [8B, 1MiB]
algorithms: [native, ring, tree, halving_doubling, hierarchical, naive]
dtypes: [float32, int64]
ops: [sum, max]
timing: {warmup: 1, iters: 6, repetitions: 2}
"""


def test_self_launched_run(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = tmp_path / "run"
    res = commbench("run", str(tmp_path / "s.yaml"), "--out", str(out), "--no-progress")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert str(out) in lines
    assert "#wrong" in res.stdout and "busbw" in res.stdout  # the nccl-tests-style table
    df = load_results(out)
    assert len(df) == 2 * 2 * 2 * 2 * 6  # world sizes x sizes x dtypes x ops x algorithms
    assert set(COLLECTIVE_FIELDS) <= set(df.columns)
    assert (df["wrong"] == 0).all()
    assert (df["iters"] == 6).all()  # the override is the total: 3 per block x 2 repetitions
    assert all(len(s) == 6 for s in df["samples_us"])
    assert (df["time_us_p5"] <= df["time_us_median"]).all()
    assert (df["time_us_median"] <= df["time_us_p95"]).all()
    assert df.loc[df["algorithm"] == "native", "bytes_sent_max"].isna().all()
    ring = df[(df["algorithm"] == "ring") & (df["world_size"] == 3) & (df["nbytes"] == 1 << 20)]
    assert len(ring) == 4  # two dtypes x two ops
    assert ((ring["bytes_sent_max"] - 2 * 2 / 3 * (1 << 20)).abs() <= 2 * 4).all()  # 2(p-1)/p n
    busbw = df["algbw_gbps"] * 2 * (df["world_size"] - 1) / df["world_size"]
    assert ((df["busbw_gbps"] - busbw).abs() < 1e-9).all()
    meta = read_meta(out)
    assert meta["status"] == "ok" and meta["scenario"]["name"] == "e2e"
    assert [j["world_size"] for j in meta["jobs"]] == [1, 3]
    assert meta["mpi"]["library"]


def test_inside_a_users_mpiexec(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "s.yaml").write_text(SCENARIO.replace("world_sizes: [1, 3]", "world_sizes: [2, 4]"))
    out = tmp_path / "job"
    cmd = [mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost", sys.executable, "-m",
           "bench", "run", str(tmp_path / "s.yaml"), "--out", str(out), "--no-progress",
           "--no-report"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=clean_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    df = load_results(out)
    assert set(df["world_size"]) == {2}  # 4 does not fit in a job of 2
    assert (df["wrong"] == 0).all()
    meta = read_meta(out)
    assert meta["launcher"] == "user's MPI job" and meta["world_size"] == 2
