"""``commbench run`` for training scenarios: self-launch with torch's launcher, or run the cases
of the job we are in (torchrun, or mpiexec/srun).

Self-launch starts ``python -m torch.distributed.run --standalone --nproc-per-node N`` once per
world size, on loopback only. When a job fails, the case it was in (from the in-flight marker)
gets a ``status: failed`` record and a new job resumes at the next case, so one bad case never
sinks the sweep. A nonzero exit after every case finished is reported as a warning: torch ranks
occasionally abort in interpreter shutdown, after the records are on disk.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.launcher import WORKER_ENV
from bench.records import ResultWriter, iter_records, read_meta, write_meta
from bench.scenario_base import ScenarioError
from bench.training import record
from bench.training.runner import BACKEND_ENV, CASE_START_ENV, INFLIGHT, JobContext, run_job
from bench.training.scenario import TrainingScenario


def handle(args: argparse.Namespace, sc: TrainingScenario, sizes: tuple[int, ...]) -> int:
    from bench.launcher import inside_mpi_job
    from bench.training.distenv import in_torch_job

    if os.environ.get(WORKER_ENV) or in_torch_job() or inside_mpi_job():
        return _in_job(args, sc, sizes)
    sizes = sizes or (1,)
    try:
        backend = sweep_backend(sc.backend, sizes)
    except ScenarioError as e:
        print(f"commbench: {args.scenario}: {e}", file=sys.stderr)
        return 2
    return self_launch(args, sc, sizes, backend)


def sweep_backend(backend: str, sizes: tuple[int, ...]) -> str:
    """The backend of every job of a self-launched sweep (all ranks on this host): ``auto``
    is nccl only when the largest world size gets a GPU per rank. Raises
    :class:`ScenarioError` with one line, before anything starts, when nccl cannot."""
    from bench.training.distenv import pick_backend, visible_gpus

    return pick_backend(backend, max(sizes), visible_gpus())


def _in_job(args: argparse.Namespace, sc: TrainingScenario, sizes: tuple[int, ...]) -> int:
    from bench.commands.run import _meta, default_run_dir

    worker_of = os.environ.get(WORKER_ENV)
    run_dir = args.out or default_run_dir(sc)
    if not worker_of and os.environ.get("RANK", os.environ.get("PMI_RANK", "0")) == "0":
        # the user's own job: rank 0 writes meta (ranks agree on --out; give one on clusters)
        info = _meta(sc, args.scenario, run_dir.name)
        info.update(launcher="user's job (torchrun/srun/mpiexec)", status="running")
        write_meta(run_dir, info)
    ctx = JobContext(run_dir, worker_of or run_dir.name, sc, sizes, bool(worker_of),
                     progress=not args.no_progress)
    return run_job(ctx)


def launch_one(scenario: Path, run_dir: Path, run_id: str, world: int, start: int,
               extra: tuple[str, ...], backend: str) -> int:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={world}", "-m", "bench", "run", str(scenario), "--out", str(run_dir),
           "--world-sizes", str(world), *extra]
    env = dict(os.environ, **{WORKER_ENV: run_id, CASE_START_ENV: str(start), BACKEND_ENV: backend,
                              "MASTER_ADDR": "127.0.0.1", "GLOO_SOCKET_IFNAME": "lo",
                              "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
                              "TORCHELASTIC_ERROR_FILE": str(run_dir / "torch-error.json")})
    return subprocess.run(cmd, env=env, check=False).returncode


def self_launch(args: argparse.Namespace, sc: TrainingScenario, sizes: tuple[int, ...],
                backend: str) -> int:
    from bench.commands.run import _after_run, _meta, default_run_dir

    run_dir = args.out or default_run_dir(sc)
    info = _meta(sc, args.scenario, run_dir.name)
    info.update(launcher="commbench (torch.distributed.run --standalone, loopback)", jobs=[],
                warnings=[])
    write_meta(run_dir, info)
    extra = ("--no-progress",) if args.no_progress else ()
    failures = 0
    try:
        for w in sizes:
            n, start = len(sc.cases(w)), 0
            while start < n:
                t0 = time.monotonic()
                rc = launch_one(args.scenario, run_dir, run_dir.name, w, start, extra, backend)
                job: dict[str, Any] = {"world_size": w, "first_case": start, "returncode": rc,
                                       "seconds": round(time.monotonic() - t0, 3)}
                info["jobs"].append(job)
                if rc == 0:
                    break
                marker = run_dir / INFLIGHT
                if not marker.exists():
                    done = sum(1 for r in iter_records(run_dir) if r.get("world_size") == w)
                    if done < n:  # no case was in flight: the job never reached its next case
                        print(f"commbench: world size {w}: job exited with code {rc} before case "
                              f"{done + 1} of {n} started (see the ranks' errors above)",
                              file=sys.stderr)
                        job["failed_start"] = done
                        failures += 1
                        break
                    msg = (f"world size {w}: launcher exit {rc} after every case finished "
                           "(a rank aborted in shutdown); records kept")
                    info["warnings"].append(msg)
                    print(f"commbench: warning: {msg}", file=sys.stderr)
                    break
                inflight = json.loads(marker.read_text())
                marker.unlink()
                idx = int(inflight["index"])
                spec, model = sc.cases(w)[idx]
                err = f"job exited with code {rc} during this case (see stderr for the rank's error)"
                with ResultWriter(run_dir) as wr:
                    wr.write(record.failed(sc, spec, model, w, err,
                                           {"run_id": run_dir.name, "scenario": sc.name}))
                print(f"commbench: case '{inflight['case']}' failed (exit {rc}); going on",
                      file=sys.stderr)
                job["failed_case"] = inflight["case"]
                failures += 1
                start = idx + 1
        status = "ok" if not failures else "failed"
    except KeyboardInterrupt:
        status = "interrupted"
    info = {**read_meta(run_dir), "jobs": info["jobs"], "warnings": info["warnings"],
            "status": status, "finished": dt.datetime.now(dt.timezone.utc).isoformat()}
    write_meta(run_dir, info)
    kept = sum(1 for _ in iter_records(run_dir))
    print(f"# {kept} records in {run_dir / 'results.jsonl'}", file=sys.stderr)
    _after_run(run_dir)
    print(run_dir)
    return {"ok": 0, "failed": 1, "interrupted": 130}[status]
