"""Slurm for real: a one-host cluster (Debian's slurmctld, slurmd, munge; this machine's cores,
127.0.0.1 only) runs ``srun -n 2 commbench run``, the shipped sbatch templates end to end,
training under srun, and a job that Slurm signals as its time limit does. Skipped, with the reason, where
Slurm is missing and cannot be installed (not root, no apt-get); the daemons always stop."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.store.records import iter_records, read_meta
from tests.conftest import ROOT, clean_env
from tests.helpers.slurm_cluster import Cluster, ensure_slurm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SMALL = """
name: slurm-small
collectives: [all_reduce, all_gather]
transports: [mpi]
world_sizes: []
ranks_per_node: [auto]
sizes: [1KiB, 64KiB]
algorithms: {all_reduce: [native, ring, hierarchical], all_gather: [native, ring]}
dtypes: [float32]
ops: [sum]
timing: {warmup: 2, time_budget_ms: 20, min_iters: 5, max_iters: 200, repetitions: 2}
check: true
case_timeout_s: 60
"""
# About 2 s per case, 80 cases: far longer than the wait for its first record and the signal.
LONG = SMALL.replace("slurm-small", "slurm-long").replace(
    "sizes: [1KiB, 64KiB]", "sizes: {min: 8B, max: 256KiB, factor: 2}").replace(
    "time_budget_ms: 20, min_iters: 5, max_iters: 200",
    "time_budget_ms: 2000, min_iters: 5, max_iters: 10000000").replace(
    "case_timeout_s: 60", "case_timeout_s: 600")
TRAINING = """
name: slurm-training
kind: training
models: [mlp]
strategies: [ddp]
world_sizes: []
batch_size: 8
steps: 2
warmup: 1
backend: gloo
case_timeout_s: 120
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    why = ensure_slurm()
    if why:
        pytest.skip(why)
    c = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def job_env() -> dict[str, str]:
    return {**clean_env(), "COMMBENCH": f"{sys.executable} -m bench"}


def srun(c: Cluster, *args: str, timeout: float = 240) -> Any:
    return c.run("srun", "-n", "2", "--mpi=pmi2", *args, env=job_env(), cwd=ROOT, timeout=timeout)


def scenario(tmp: Path, text: str) -> Path:
    path = tmp / "scenario.yaml"
    path.write_text(text)
    return path


def test_srun_runs_with_ranks_hosts_and_nodes_from_slurm(cluster: Cluster, tmp_path: Path) -> None:
    seen = srun(cluster, "printenv", "SLURM_TASKS_PER_NODE")
    assert seen.returncode == 0, seen.stderr
    per_node = int(seen.stdout.split()[0])
    out = tmp_path / "run"
    res = srun(cluster, sys.executable, "-m", "bench", "run", str(scenario(tmp_path, SMALL)),
               "--out", str(out), "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    recs = list(iter_records(out))
    assert len(recs) == 2 * 3 + 2 * 2 and all(r["status"] == "ok" and r["wrong"] == 0 for r in recs)
    assert {(r["world_size"], r["ranks_per_node"], r["nodes"]) for r in recs} == {(2, per_node, 1)}
    meta = read_meta(out)
    assert meta["status"] == "ok" and meta["hosts"] == [socket.gethostname()]
    assert meta["launcher"] == "user's MPI job" and meta["world_size"] == 2
    assert (out / "report.html").is_file() and res.stdout.strip().endswith("report.html")


def sbatch(c: Cluster, tmp: Path, script: Path, *opts: str, env: dict[str, str],
           timeout: float = 300) -> tuple[int, str, str]:
    """Submit, wait for the end; (exit code, final state, the job's output). Polled here rather
    than by ``sbatch --wait``, whose own polling backs off to half a minute between looks."""
    log = tmp / "job.out"
    res = c.run("sbatch", "--parsable", "-o", str(log), *opts, str(script),
                env={**job_env(), **env}, cwd=ROOT, timeout=timeout)
    assert res.returncode == 0, res.stderr
    job = res.stdout.strip().split(";")[0]
    deadline = time.monotonic() + timeout
    while (fields := _job(c, job)).get("JobState") in ("PENDING", "RUNNING", "COMPLETING", None):
        assert time.monotonic() < deadline, fields
        time.sleep(0.2)
    rc = int(fields.get("ExitCode", "-1:0").split(":")[0])
    return rc, fields["JobState"], (log.read_text() if log.exists() else "") + res.stderr


def test_bringup_template_end_to_end(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "bringup"
    rc, state, text = sbatch(cluster, tmp_path, ROOT / "scripts/slurm/bringup.sbatch",
                             "-N", "1", "--ntasks-per-node", "2",
                             env={"OUT": str(out), "BRINGUP_ARGS": "--sizes 64KiB"})
    assert rc == 0 and state == "COMPLETED", text[-3000:]
    assert "2 rank(s) (2 per node)" in text and text.strip().endswith("report.html")
    recs = list(iter_records(out))  # one host: its host stage, native and ring at 64 KiB
    assert sorted((r["kind"], r["stage"], r["algorithm"]) for r in recs) == \
        [("bringup", "host", "native"), ("bringup", "host", "ring")]
    assert read_meta(out)["status"] == "ok"
    assert json.loads((out / "verdict.json").read_text())["ok"] is True
    assert "# bring-up verdict: not judged (one host)" in text  # one node, no profile


def test_bringup_template_runs_a_scenario_instead(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    rc, state, text = sbatch(cluster, tmp_path, ROOT / "scripts/slurm/bringup.sbatch",
                             "-N", "1", "--ntasks-per-node", "2",
                             env={"SCENARIO": str(scenario(tmp_path, SMALL)), "OUT": str(out)})
    assert rc == 0 and state == "COMPLETED", text[-3000:]
    assert text.strip().endswith("report.html")
    recs = list(iter_records(out))
    assert len(recs) == 10 and {r["world_size"] for r in recs} == {2}


def test_training_under_srun(cluster: Cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "train"
    res = srun(cluster, sys.executable, "-m", "bench", "run", str(scenario(tmp_path, TRAINING)),
               "--out", str(out), "--no-progress", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    recs = list(iter_records(out))
    assert len(recs) == 1 and all(r["status"] == "ok" and r["world_size"] == 2 for r in recs)
    assert all(r["loss_max_abs_diff"] <= 1e-5 for r in recs)


def test_a_job_signalled_by_slurm_leaves_an_interrupted_run(cluster: Cluster,
                                                            tmp_path: Path) -> None:
    """What Slurm does at a job's time limit (and ``scancel --signal=TERM``): slurmstepd sends
    SIGTERM to every task of the job's steps, SIGKILL after KillWait. Sent here once the first
    records are on disk instead of waiting out the limit's one-minute minimum: the same signal
    reaches the ranks the same way."""
    out = tmp_path / "long"
    sc = scenario(tmp_path, LONG)
    script = tmp_path / "long.sbatch"
    script.write_text(f"#!/bin/bash\nsrun --mpi=pmi2 {sys.executable} -m bench run {sc} "
                      f"--out {out} --no-progress\n")
    log = tmp_path / "job.out"
    res = cluster.run("sbatch", "--parsable", "-n", "2", "-o", str(log), str(script),
                      env=job_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    job = res.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 240
    while not (out / "results.jsonl").exists() or not list(iter_records(out)):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no job output"
        time.sleep(0.2)
    assert cluster.run("scancel", "--signal=TERM", job).returncode == 0
    while _state(cluster, job) in ("PENDING", "RUNNING", "COMPLETING"):
        assert time.monotonic() < deadline, _state(cluster, job)
        time.sleep(0.2)
    text = log.read_text() if log.exists() else ""
    assert _state(cluster, job) == "FAILED", text[-2000:]  # the step's ranks exit 128 + 15
    recs = list(iter_records(out))
    assert recs and all(r["status"] == "ok" for r in recs), text[-2000:]
    assert len(recs) < 5 * 16, "the whole scenario finished: the signal did not end it"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted", (meta.get("status"), meta.get("reason"), text[-1500:])
    assert meta["signal"] == "SIGTERM"


def _job(c: Cluster, job: str) -> dict[str, str]:
    """``scontrol show job``'s fields (JobState, ExitCode, ...); {} while it cannot say."""
    shown = c.run("scontrol", "show", "job", job).stdout
    return dict(w.split("=", 1) for w in shown.split() if "=" in w)


def _state(c: Cluster, job: str) -> str:
    return _job(c, job).get("JobState", "?")
