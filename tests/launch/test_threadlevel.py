"""The MPI thread level: auto picks funneled while ranks fit the cores and multiple beyond; what
was requested and provided is recorded, and the user's MPI4PY_RC_THREAD_LEVEL wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.launch.threadlevel import choose, local_ranks
from bench.store.records import load_results
from tests.conftest import ROOT, default_env, mpiexec


def test_auto_follows_oversubscription() -> None:
    assert choose("auto", 2, 2) == "funneled"
    assert choose("auto", 3, 2) == "multiple"
    assert choose("single", 8, 2) == "single"


def test_local_ranks_from_each_launcher() -> None:
    assert local_ranks({"MPI_LOCALNRANKS": "3"}) == 3
    assert local_ranks({"OMPI_COMM_WORLD_LOCAL_SIZE": "4"}) == 4
    assert local_ranks({"SLURM_NTASKS_PER_NODE": "8(x2)"}) == 8
    assert local_ranks({}) == 1


SCENARIO = """name: tl
world_sizes: [2]
sizes: [1KiB]
algorithms: [native]
timing: {warmup: 1, iters: 2, repetitions: 1}
"""


@pytest.mark.mpi
@pytest.mark.parametrize(("extra", "env", "want"), [
    ("", {}, "funneled" if (os.cpu_count() or 1) >= 2 else "multiple"),
    pytest.param("thread_level: single\n", {}, "single", marks=pytest.mark.slow),
    ("thread_level: single\n", {"MPI4PY_RC_THREAD_LEVEL": "serialized"}, "serialized"),
])
def test_requested_and_provided_are_recorded(tmp_path: Path, extra: str, env: dict[str, str],
                                             want: str) -> None:
    sc = tmp_path / "s.yaml"
    sc.write_text(SCENARIO + extra)
    out = tmp_path / "run"
    cmd = [mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost", sys.executable, "-m",
           "bench", "run", str(sc), "--out", str(out), "--no-progress", "--no-report"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT,
                         env={**default_env(), **env})
    assert res.returncode == 0, res.stderr[-2000:]
    df = load_results(out)
    assert set(df["mpi_thread_requested"]) == {want}
    assert set(df["mpi_thread_provided"]) == {want}  # MPICH provides what is asked
    assert set(df["hugepages"]) == {"off"} and (df["hugepage_bytes"] >= 0).all()


@pytest.mark.mpi
def test_command_line_overrides_reach_the_ranks(tmp_path: Path) -> None:
    sc = tmp_path / "s.yaml"
    sc.write_text(SCENARIO.replace("1KiB", "16KiB"))  # above OSU's 8 KiB: 10 + 100 iterations
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "bench", "run", str(sc), "--out", str(out),
                          "--no-progress", "--no-report", "--thread-level", "single",
                          "--timing-style", "osu"], capture_output=True, text=True, timeout=240,
                         cwd=ROOT, env=default_env())
    assert res.returncode == 0, res.stderr[-2000:]
    assert "OSU's avg" in res.stdout  # the table says which statistic it shows
    df = load_results(out)
    assert set(df["mpi_thread_provided"]) == {"single"}
    assert set(df["timing_style"]) == {"osu"}
    # the headline is OSU's statistic (equal up to the last bit of a float division)
    assert np.allclose(df["algbw_gbps"], df["nbytes"] / df["time_us_osu_avg"] / 1e3, rtol=1e-12)
