"""A rank that dies or hangs ends the run with a non-zero exit naming the case; finished records
stay on disk and loadable, and the MPICH segments its killed ranks never unlinked are removed
from /dev/shm."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bench.launch.shmclean import held_by
from bench.store.records import iter_records, load_results, read_meta
from tests.conftest import ROOT, clean_env, default_env

pytestmark = pytest.mark.mpi

SCENARIO = """\
name: {name}
world_sizes: [3]
sizes: {{min: 1KiB, max: 64MiB, factor: 2}}
algorithms: [ring, native]
timing: {{warmup: 1, iters: 40, repetitions: 1}}
case_timeout_s: {timeout}
"""


def _start(tmp_path: Path, name: str, timeout: float) -> tuple[subprocess.Popen[str], Path]:
    scen = tmp_path / f"{name}.yaml"
    scen.write_text(SCENARIO.format(name=name, timeout=timeout))
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "bench", "run", str(scen), "--out", str(run_dir),
                             "--no-progress", "--no-report"], cwd=ROOT, env=default_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, run_dir


def _wait_for_records(proc: subprocess.Popen[str], run_dir: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"run ended early: {proc.stderr.read() if proc.stderr else ''}")
        if (run_dir / "results.jsonl").exists() and sum(1 for _ in iter_records(run_dir)) >= n:
            return
        time.sleep(0.05)
    pytest.fail("no records appeared")


def _a_rank(proc: subprocess.Popen[str], rank: int) -> psutil.Process:
    """The rank process (python running bench under mpiexec) whose PMI_RANK is ``rank``."""
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if "bench" in child.cmdline() and child.environ().get("PMI_RANK") == str(rank):
                return child
        except psutil.Error:
            continue
    pytest.fail(f"rank {rank} not found")


def _segments(proc: subprocess.Popen[str]) -> set[str]:
    """The MPICH shared-memory segments the run's processes map now (at least one). The launcher
    notes them as the first case begins (polling every 20 ms until then): a moment later, it
    has."""
    time.sleep(0.5)
    tree = [proc.pid, *(p.pid for p in psutil.Process(proc.pid).children(recursive=True))]
    segs = {path for path, _ in held_by(tree) if Path(path).name.startswith("mpich_shm_")}
    assert segs, "the ranks map no MPICH segment"  # else the checks below check nothing
    return segs


def _assert_no_segment_left(segs: set[str], run_dir: Path) -> None:
    left = sorted(s for s in segs if os.path.exists(s))
    assert left == [], f"segments the killed ranks left in /dev/shm: {left}"
    assert read_meta(run_dir)["jobs"][-1]["shm_removed"] >= len(segs)


def _assert_kept(run_dir: Path, at_least: int) -> None:
    df = load_results(run_dir)
    assert len(df) >= at_least
    assert (df["wrong"] == 0).all()
    assert read_meta(run_dir)["status"] == "failed"


def test_killed_rank_ends_run_naming_the_case(tmp_path: Path) -> None:
    proc, run_dir = _start(tmp_path, "kill", timeout=60)
    _wait_for_records(proc, run_dir, 4)
    segs = _segments(proc)
    _a_rank(proc, 1).kill()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode not in (0, None)
    assert "failed during case 'all_reduce ring/native mpi p=3" in err, err
    _assert_kept(run_dir, 4)
    _assert_no_segment_left(segs, run_dir)


def test_hung_rank_is_aborted_after_case_timeout(tmp_path: Path) -> None:
    proc, run_dir = _start(tmp_path, "hang", timeout=3)
    _wait_for_records(proc, run_dir, 2)
    segs = _segments(proc)
    victim = _a_rank(proc, 2)
    job = [victim, *psutil.Process(proc.pid).children(recursive=True)]
    victim.suspend()  # stopped: its launcher's SIGTERM cannot end it, only a SIGKILL
    try:
        _, err = proc.communicate(timeout=120)
        # the run ends only when every process of its job is gone (then its segments go too)
        left = [p.pid for p in job if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        if victim.is_running():
            victim.kill()
    assert left == [], f"processes of the job still there when the run ended: {left}"
    assert proc.returncode not in (0, None)
    # the launcher says why itself: the aborting rank's own line can be lost in the teardown
    assert re.search(r"world size 3 failed during case '[^']+': exceeded case_timeout_s=3: "
                     r"rank 2 on \S+ never arrived: not responding \(killed or stopped", err), err
    hang = read_meta(run_dir)["jobs"][-1]["hang"]
    assert [r["rank"] for r in hang["missing"]] == [2]
    assert sorted(r["rank"] for r in hang["waiting"]) == [0, 1]
    assert read_meta(run_dir)["jobs"][-1]["reason"].startswith("exceeded case_timeout_s=3")
    _assert_kept(run_dir, 2)
    _assert_no_segment_left(segs, run_dir)


def test_ctrl_c_keeps_finished_records(tmp_path: Path) -> None:
    proc, run_dir = _start(tmp_path, "intr", timeout=60)
    _wait_for_records(proc, run_dir, 2)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert len(load_results(run_dir)) >= 2
    assert read_meta(run_dir)["status"] == "interrupted"


BROKEN = '''\
"""A real, deliberately wrong AllReduce: ring reduce-scatter without its all-gather."""
from kernels import rings
from kernels.algorithm import algorithm
from kernels.chunks import split


@algorithm("broken_ring")
def broken_ring(problem, b):
    """Ring reduce-scatter only: each rank ends with one reduced chunk, the rest stale."""
    p = problem.world
    rings.reduce_scatter(b, list(range(p)), split(problem.count, p), rings.open_steps(b, p - 1))
'''
WRONG = """\
name: wrong
world_sizes: [1, 2]
sizes: [8B, 64KiB]
algorithms: [native, broken_ring]
timing: {warmup: 1, iters: 4, repetitions: 1}
"""


def _with_broken_algorithm(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python processes (commbench and every rank) know ``broken_ring``."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "sitecustomize.py").write_text(BROKEN)
    env = clean_env()
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{plugin}"
    return env


def test_wrong_results_fail_the_run_after_every_case(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(WRONG)
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "bench", "run", str(tmp_path / "s.yaml"), "--out",
                          str(out), "--no-progress"], capture_output=True, text=True, timeout=240,
                         env=_with_broken_algorithm(tmp_path), cwd=ROOT)
    assert res.returncode == 1, res.stderr
    df = load_results(out)
    assert len(df) == 2 * 2 * 2  # every case ran: world sizes x sizes x algorithms
    wrong = df[df["status"] == "wrong"]
    assert set(wrong["algorithm"]) == {"broken_ring"} and set(wrong["world_size"]) == {2}
    assert (wrong["wrong"] > 0).all() and len(wrong) == 2
    meta = read_meta(out)
    assert meta["status"] == "failed" and meta["reason"].startswith("2 cases wrong")
    assert "commbench: 2 cases wrong" in res.stderr
    assert res.stdout.strip().splitlines()[-1] == str(out / "report.html")  # still the last line


@pytest.mark.slow  # make test only: the self-launched case runs in the fast tier
def test_wrong_results_fail_a_users_mpiexec_job(tmp_path: Path) -> None:
    from tests.conftest import mpiexec

    (tmp_path / "s.yaml").write_text(WRONG.replace("[1, 2]", "[2]"))
    out = tmp_path / "job"
    cmd = [mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost", sys.executable, "-m",
           "bench", "run", str(tmp_path / "s.yaml"), "--out", str(out), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                         env=_with_broken_algorithm(tmp_path), cwd=ROOT)
    assert res.returncode == 1, res.stderr
    assert len(load_results(out)) == 4
    assert read_meta(out)["status"] == "failed"
    assert res.stdout.strip().splitlines()[-1] == str(out / "report.html")


@pytest.mark.slow  # make test only: a full run, then the report on a damaged copy
def test_report_skips_a_corrupt_line_and_names_it(tmp_path: Path) -> None:
    from tests.conftest import commbench

    (tmp_path / "s.yaml").write_text(WRONG.replace("[1, 2]", "[2]").replace("broken_ring", "ring"))
    run = tmp_path / "run"
    assert commbench("run", str(tmp_path / "s.yaml"), "--out", str(run), "--no-progress",
                     "--no-report").returncode == 0
    path = run / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:40] + "\n"  # a line in the middle, cut (a disk or an editor, not a crash)
    path.write_text("".join(lines))
    res = commbench("report", str(run), "-o", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"commbench: report: skipped {path}:2: not a JSON record"]
    assert res.stdout.strip() == str(tmp_path / "r.html") and (tmp_path / "r.html").is_file()
    strict = commbench("report", str(run), "-o", str(tmp_path / "s.html"), "--strict")
    assert strict.returncode == 2
    assert strict.stderr.strip().splitlines() == [
        f"commbench: report: {path}:2: not a JSON record (--strict)"]
    assert not (tmp_path / "s.html").exists()


RPN = """\
name: rpn
world_sizes: {sizes}
ranks_per_node: [{rpn}]
sizes: [8B]
algorithms: [native]
timing: {{warmup: 1, iters: 2, repetitions: 1}}
"""


@pytest.mark.parametrize("sizes, rpn, args, message", [
    ("[2]", 2, ["--world-sizes", "3"], "--world-sizes: ranks_per_node 2 does not divide world size 3"),
    ("[2]", 1, ["--world-sizes", "2,2"], "run: argument --world-sizes: '2,2': an entry given twice"),
    ("[2]", 1, ["--world-sizes", "0"], "run: argument --world-sizes: '0': a world size from 1 to 2^20 ranks"),
    ("[2]", 1, ["--world-sizes", "2,x"],
     "run: argument --world-sizes: 'x' is not a whole number (a world size from 1 to 2^20 ranks)"),
    ("[]", psutil.cpu_count() + 1, [],
     "{scenario}: world_sizes (empty: the default world size): ranks_per_node "
     f"{psutil.cpu_count() + 1} "
     f"does not divide world size {psutil.cpu_count()}"),
])
def test_world_sizes_that_cannot_run_are_refused_before_launch(
        tmp_path: Path, sizes: str, rpn: int, args: list[str], message: str) -> None:
    from tests.conftest import commbench

    (tmp_path / "s.yaml").write_text(RPN.format(sizes=sizes, rpn=rpn))
    res = commbench("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run"), *args)
    assert res.returncode == 2
    message = message.replace("{scenario}", str(tmp_path / "s.yaml"))
    assert res.stderr.strip().splitlines() == [f"commbench: {message}"], res.stderr
    assert not (tmp_path / "run").exists()  # nothing launched, nothing written


def test_users_job_whose_size_ranks_per_node_does_not_divide(tmp_path: Path) -> None:
    from tests.conftest import mpiexec

    (tmp_path / "s.yaml").write_text(RPN.format(sizes="[]", rpn=2))
    cmd = [mpiexec(), "-n", "3", "-launcher", "fork", "-hosts", "localhost", sys.executable, "-m",
           "bench", "run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "job")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean_env(), cwd=ROOT)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "commbench: world sizes of this job: ranks_per_node 2 does not divide world size 3"]
    assert not (tmp_path / "job").exists()
