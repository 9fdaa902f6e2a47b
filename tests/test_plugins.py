""""One file" is true: an algorithm file in a package of its own (``COMMBENCH_PLUGINS``), with no
other edit anywhere, is listed, proven by the verifier with its bytes checked, and measured
exactly on real ranks. A wrong closed form in that file fails its tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, mpiexec

PLUGIN = '''
from kernels.algorithm import Problem, algorithm
from kernels.schedule import StepBuilder


@algorithm("star", "all_gather", sent=lambda pr, r: {SENT})
def star(problem: Problem, b: StepBuilder) -> None:
    """Every block to rank 0, then rank 0 sends each rank the blocks it lacks.

    2 steps. Elements sent: n/p by each other rank, (p-1)^2 n/p by rank 0.
    """
    blocks, p = problem.blocks(), problem.world
    st = b.step()
    for r in range(1, p):
        b.move(r, 0, blocks[r], reduce=False, step=st)
    st = b.step()
    for r in range(1, p):
        for j in range(p):
            if j != r:
                b.move(0, r, blocks[j], reduce=False, step=st)
'''
RIGHT = "(pr.world - 1) ** 2 * pr.block if r == 0 else pr.block"


def _plugin(tmp_path: Path, sent: str) -> dict[str, str]:
    pkg = tmp_path / "myalgs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "star_gather.py").write_text(PLUGIN.replace("{SENT}", sent))
    env = clean_env()
    env["PYTHONPATH"] = f"{tmp_path}:{ROOT}"
    env["COMMBENCH_PLUGINS"] = "myalgs"
    return env


def _run(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def test_a_plugin_file_is_listed_and_verified(tmp_path: Path) -> None:
    env = _plugin(tmp_path, RIGHT)
    listed = _run(env, sys.executable, "-m", "bench", "list")
    assert listed.returncode == 0 and "star " in listed.stdout, listed.stderr
    proven = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/test_algorithms.py", "-k", "star")
    assert proven.returncode == 0, proven.stdout[-2000:]
    assert "5 passed" in proven.stdout


def test_a_wrong_closed_form_fails(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "(pr.world - 1) * pr.block")
    proven = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/test_algorithms.py", "-k", "star and world_size_to_64")
    assert proven.returncode == 1 and "closed form" in proven.stdout


@pytest.mark.mpi
def test_a_plugin_algorithm_runs_exactly_under_mpiexec(tmp_path: Path) -> None:
    env = _plugin(tmp_path, RIGHT)
    res = _run(env, mpiexec(), "-n", "3", "-launcher", "fork", "-hosts", "localhost",
               sys.executable, str(ROOT / "tests" / "mpi" / "exact.py"), "mpi")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["failures"] == [] and out["checks"] > 0
    star = [f for f in out.get("algorithms", []) if f == "all_gather/star"]
    assert star, "exact.py did not run the plugin algorithm"
