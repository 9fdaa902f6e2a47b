""""One file" is true: an algorithm file in a package of its own (``COMMBENCH_PLUGINS``), with no
other edit anywhere, is listed (and in the docs' table), proven by the verifier with its bytes
checked, measured exactly on real ranks, and predicted at 4,096 ranks by the closed form it
declares beside its build, which the tests hold equal to the evaluator. A wrong closed form in
that file (of its bytes or of its time) fails its tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, mpiexec

PLUGIN = '''
from kernels.algorithm import Problem, algorithm
from kernels.closed import INTER, Ctx, Estimate, estimate
from kernels.compiled import BLOCKS
from kernels.schedule import StepBuilder


def cost(x: Ctx) -> Estimate | str:
    """One link class (one node, or one rank per node under one leaf): p-1 blocks into rank 0
    at once, then (p-1)^2 out of it, posted one after another."""
    if x.p == 1 or (x.N > 1 and (x.l > 1 or x.leaves > 1)):
        return "one node, or one rank per node under one leaf, only"
    m = (x.p - 1) ** 2
    if x.N == 1:
        t = x.intra(x.b, x.p - 1) + x.intra(x.b, m, j={LAST})
    else:
        t = x.cross(INTER, x.b, x.p - 1, x.p - 1) + x.cross(INTER, x.b, m, m, j={LAST})
    return estimate(t, 2, m * x.b, m * x.b * (x.N > 1))


@algorithm("star", "all_gather", sent=lambda pr, r: {SENT}, shape=BLOCKS, closed=cost)
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


def _plugin(tmp_path: Path, sent: str, last: str = "m") -> dict[str, str]:
    """The plugin package; ``last``: the posting position of rank 0's last send in the closed
    form (m is right)."""
    pkg = tmp_path / "myalgs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "star_gather.py").write_text(PLUGIN.replace("{SENT}", sent).replace("{LAST}", last))
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
    table = _run(env, sys.executable, "-m", "bench", "list", "--markdown")
    assert table.returncode == 0 and "| `star` | Every block to rank 0" in table.stdout
    proven = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/kernels/test_algorithms.py", "-k", "star")
    assert proven.returncode == 0, proven.stdout[-2000:]
    assert "5 passed" in proven.stdout


def test_a_wrong_closed_form_fails(tmp_path: Path) -> None:
    env = _plugin(tmp_path, "(pr.world - 1) * pr.block")
    proven = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/kernels/test_algorithms.py", "-k", "star and world_size_to_64")
    assert proven.returncode == 1 and "closed form" in proven.stdout


def test_a_plugin_closed_form_is_held_to_the_evaluator_and_predicts_at_scale(
        tmp_path: Path) -> None:
    env = _plugin(tmp_path, RIGHT)
    held = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "tests/costmodel/test_costmodel.py", "-k", "closed_form_equals and star")
    assert held.returncode == 0 and "1 passed" in held.stdout, held.stdout[-2000:]
    out = tmp_path / "pred"
    res = _run(env, sys.executable, "-m", "bench", "predict", "--profile", "h100-ib400",
               "--topology", "1x4096", "--world-sizes", "4096", "--collectives", "all_gather",
               "--algorithms", "star", "--sizes", "1MiB", "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["algorithm"], r["world_size"], r["prediction"]["method"]) for r in recs] == [
        ("star", 4096, "closed form")]
    assert recs[0]["time_us_median"] > 0 and recs[0]["steps"] == 2


def test_a_wrong_closed_form_of_its_time_fails(tmp_path: Path) -> None:
    env = _plugin(tmp_path, RIGHT, last="1")  # forgets that rank 0 posts its sends in turn
    held = _run(env, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "tests/costmodel/test_costmodel.py", "-k", "closed_form_equals and star")
    assert held.returncode == 1 and "1 failed" in held.stdout


@pytest.mark.mpi
@pytest.mark.slow
def test_a_plugin_algorithm_runs_exactly_under_mpiexec(tmp_path: Path) -> None:
    env = _plugin(tmp_path, RIGHT)
    res = _run(env, mpiexec(), "-n", "3", "-launcher", "fork", "-hosts", "localhost",
               sys.executable, str(ROOT / "tests" / "mpi" / "exact.py"), "mpi")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["failures"] == [] and out["checks"] > 0
    star = [f for f in out.get("algorithms", []) if f == "all_gather/star"]
    assert star, "exact.py did not run the plugin algorithm"
