"""``commbench ab``: one-line refusals (rounds, scenario, revisions, dependencies), and for real:
two worktrees of this repository run alternately, records tagged by round, the gate's verdict,
no worktree left behind; a controlled 2x slowdown of ring (the test-only plugin) is caught."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.ab import Side, resolve, run_rounds, worktrees
from bench.abdeps import mismatch, unsatisfied
from bench.compare.decide import Rule
from bench.compare.paired import ROUND, compare_dirs
from bench.records import iter_records, read_meta
from tests.conftest import ROOT, clean_env

TINY = """
name: ab-tiny
collective: allreduce
transports: [mpi]
world_sizes: [2]
ranks_per_node: [auto]
sizes: [64KiB, 256KiB]
algorithms: [native, ring, tree]
dtypes: [float32]
ops: [sum]
timing: {warmup: 3, time_budget_ms: 40, min_iters: 30, max_iters: 2000, repetitions: 2}
check: true
case_timeout_s: 60
"""
PLUGINS = ROOT / "tests" / "plugins"


def ab(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", "ab", *args], capture_output=True,
                          text=True, env=clean_env(), cwd=cwd, timeout=timeout)


def one_line(res: subprocess.CompletedProcess[str], *words: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("commbench: ab: "), res.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_refusals_are_one_line(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    one_line(ab("HEAD", "HEAD", str(sc), "--rounds", "1"), "--rounds must be >= 2")
    one_line(ab("HEAD", "HEAD", str(sc), "--rounds", "3"), "--alpha 0.05 needs --rounds >= 5")
    one_line(ab("HEAD", "HEAD", str(tmp_path / "none.yaml")), "no such scenario file")
    one_line(ab("HEAD", "no-such-rev-xyz", str(sc)), "'no-such-rev-xyz' is not a commit")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    one_line(ab("HEAD", "HEAD", str(sc), "--out", str(tmp_path / "full")), "not empty")


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for tag, deps in (("a", '["numpy>=1.26"]'), ("b", '["numpy>=1.26", "left-pad>=1"]')):
        (repo / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = {deps}\n')
        subprocess.run([*git, "add", "pyproject.toml"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", tag], check=True)
        subprocess.run([*git, "tag", tag], check=True)
    return repo


def test_other_dependencies_refuse_in_one_line_and_leave_no_worktree(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    one_line(ab("a", "b", str(sc), cwd=repo), "HEAD declares other dependencies than BASE",
             "+left-pad>=1", "environment of its own")
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                            text=True).stdout.strip().splitlines()
    assert len(listed) == 1  # only the repository itself
    with worktrees(repo, {"b": resolve(repo, "b")}) as trees:
        why = mismatch({"A": trees["b"], "B": trees["b"]})  # the same, but left-pad is not here
        assert why is not None and "left-pad (not installed)" in why
    assert unsatisfied({"numpy>=99", 'torch>=1; extra == "training"'})[0].startswith("numpy ")


@pytest.mark.slow
@pytest.mark.mpi
def test_ab_runs_both_sides_in_rounds(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    out = tmp_path / "ab"
    res = ab("HEAD", "HEAD", str(sc), "--rounds", "2", "--alpha", "0.25", "--out", str(out), "--html",
             str(tmp_path / "ab.html"), timeout=600)
    assert res.returncode in (0, 1), res.stderr[-3000:]  # a noisy machine may call a key
    lines = res.stdout.strip().splitlines()
    assert lines[-1].startswith("# wall time ") and "in 4 runs of" in lines[-1]
    assert lines[-2].startswith(("PASS: no regression in 6 keys", "FAIL: "))
    for side in ("base", "head"):
        recs = list(iter_records(out / side))
        assert sorted({r[ROUND] for r in recs}) == [1, 2] and len(recs) == 2 * 6
        assert [r[ROUND] for r in read_meta(out / side)["ab"]["rounds"]] == [1, 2]
    order = [ln.split()[4] for ln in res.stderr.splitlines() if ln.startswith("# ab: round")]
    assert order == ["BASE", "HEAD", "HEAD", "BASE"]
    assert (tmp_path / "ab.html").is_file()
    assert "commbench-ab-" not in subprocess.run(["git", "-C", str(ROOT), "worktree", "list"],
                                                 capture_output=True, text=True).stdout


@pytest.mark.slow
@pytest.mark.mpi
def test_a_controlled_slowdown_of_ring_is_caught(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    sha = resolve(ROOT, "HEAD")
    with worktrees(ROOT, {"base": sha, "head": sha}) as trees:
        sides = [Side("base", "HEAD", sha, trees["base"], tmp_path / "base"),
                 Side("head", "HEAD", sha, trees["head"], tmp_path / "head",
                      env={"COMMBENCH_PLUGINS": "commbench_slowdown", "COMMBENCH_SLOWDOWN": "2"},
                      path=(PLUGINS,))]
        run_rounds(sides, sc, 3, tmp_path / "rounds", lambda _: None)
    res = compare_dirs(tmp_path / "base", tmp_path / "head", Rule(reference=True), alpha=1 / 8)
    ring = [r for r in res.rows if r.key[2] == "ring"]
    assert len(ring) == 2 and all(r.decision and r.decision.ratio > 1.5 for r in ring), ring
    assert all(r.outcome == "slower" for r in ring) and res.exit_code == 1
