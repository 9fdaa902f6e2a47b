"""Self-launch: outside an MPI job, start the embedded mpiexec once per world size.

Ranks bind to this host only (fork launcher, localhost). The parent owns ``meta.json``; each job
appends records to the same ``results.jsonl``. A job that fails is named by the case it was in
(from ``inflight.json``), and the sweep stops there with every finished record on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.progress import TTY_ENV
from bench.runner import INFLIGHT
from bench.watchdog import TIMEOUT_EXIT

MPI_ENV_MARKERS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                   "MV2_COMM_WORLD_SIZE", "MPI_LOCALRANKID", "SLURM_STEP_ID")
WORKER_ENV = "COMMBENCH_WORKER"


def inside_mpi_job() -> bool:
    """True when a launcher (mpiexec, srun, ...) started this process as an MPI rank."""
    if "SLURM_STEP_ID" in os.environ and "SLURM_PROCID" not in os.environ:
        return False
    return any(k in os.environ for k in MPI_ENV_MARKERS)


def find_mpiexec() -> str:
    here = Path(sys.executable).parent
    for cand in (here / "mpiexec", shutil.which("mpiexec")):
        if cand and Path(cand).exists():
            return str(cand)
    raise FileNotFoundError("no mpiexec found: install the 'mpich' wheel (pip install mpich)")


@dataclass(frozen=True)
class JobResult:
    world_size: int
    returncode: int
    seconds: float
    failed_case: str | None
    reason: str | None = None  # why, when the launcher can tell (the watchdog's exit code)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def launch(scenario_path: Path, run_dir: Path, run_id: str, world: int,
           extra_args: tuple[str, ...] = ()) -> JobResult:
    """Run one world size under the embedded mpiexec; Ctrl-C is passed on to the ranks."""
    cmd = [find_mpiexec(), "-n", str(world), "-launcher", "fork", "-hosts", "localhost",
           sys.executable, "-m", "bench", "run", str(scenario_path), "--out", str(run_dir),
           "--world-sizes", str(world), *extra_args]
    env = dict(os.environ, **{WORKER_ENV: run_id, "PYTHONUNBUFFERED": "1"})
    if sys.stderr.isatty():
        env[TTY_ENV] = "1"
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        _stop(proc)
        raise
    failed = reason = None
    if rc != 0:
        marker = run_dir / INFLIGHT
        if marker.exists():
            inflight = json.loads(marker.read_text())
            failed = inflight.get("case")
            marker.unlink()
            if rc == TIMEOUT_EXIT and "timeout_s" in inflight:
                # said here too: MPI_Abort can tear the job down before the aborting rank's own
                # line is forwarded by mpiexec
                reason = f"exceeded case_timeout_s={inflight['timeout_s']:g} (a rank hung or died)"
    return JobResult(world, rc, time.monotonic() - t0, failed, reason)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
