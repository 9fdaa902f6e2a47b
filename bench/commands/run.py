"""``commbench run SCENARIO``: self-launched sweep, or the cases of the MPI job it runs in."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import psutil

from bench import launcher, meta
from bench.commands import register
from bench.records import SCHEMA_VERSION, iter_records, write_meta
from bench.scenario import CollectiveScenario, ScenarioError, check_memory, load_scenario
from kernels.transports import TRANSPORTS

# Scenario kinds with their own runner (args, scenario, world sizes) -> exit code.
KIND_RUNNERS: dict[str, str] = {"training": "bench.training.launch:handle"}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path, help="scenario YAML file (e.g. scenarios/quick.yaml)")
    p.add_argument("--out", type=Path, default=None,
                   help="run directory (default: runs/<time>-<scenario name>)")
    p.add_argument("--world-sizes", default=None,
                   help="comma-separated world sizes, overriding the scenario's")
    p.add_argument("--no-progress", action="store_true", help="no progress output")


def handle(args: argparse.Namespace) -> int:
    try:
        sc = load_scenario(args.scenario)
        sizes = _world_sizes(args, sc)
    except ScenarioError as e:
        print(f"commbench: {e}", file=sys.stderr)
        return 2
    runner = KIND_RUNNERS.get(sc.kind)
    if runner is not None:  # other scenario kinds run themselves: "module:function"
        mod, _, fn = runner.partition(":")
        return int(getattr(importlib.import_module(mod), fn)(args, sc, sizes))
    if launcher.inside_mpi_job() or os.environ.get(launcher.WORKER_ENV):
        return _run_in_job(args, sc, sizes)
    return _self_launch(args, sc, sizes)


def _world_sizes(args: argparse.Namespace, sc: CollectiveScenario) -> tuple[int, ...]:
    if args.world_sizes:
        try:
            out = tuple(int(x) for x in args.world_sizes.split(","))
        except ValueError:
            raise ScenarioError(
                f"--world-sizes: not a list of integers: {args.world_sizes!r}") from None
        if any(w < 1 for w in out):
            raise ScenarioError("--world-sizes: world sizes must be >= 1")
        return out
    return tuple(sc.world_sizes)


def default_run_dir(sc: CollectiveScenario) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stamp}-{sc.name}"


def _meta(sc: CollectiveScenario, source: Path, run_id: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "source": "commbench",
        "scenario": sc.model_dump(mode="json"),
        "scenario_path": str(source),
        "started": dt.datetime.now(dt.timezone.utc).isoformat(),
        **meta.environment(),
    }


def default_world_size(sc: CollectiveScenario) -> int:
    """Self-launched without world sizes: one rank per visible GPU when the scenario measures a
    device transport (and a GPU exists), else one rank per core."""
    if any(TRANSPORTS.get(t).device for t in sc.transports):
        gpus = meta.visible_gpu_count()
        if gpus:
            return gpus
    return psutil.cpu_count(logical=True) or 1


def _self_launch(args: argparse.Namespace, sc: CollectiveScenario, sizes: tuple[int, ...]) -> int:
    sizes = sizes or (default_world_size(sc),)
    try:
        check_memory(sc, str(args.scenario), max(sizes), psutil.virtual_memory().available)
    except ScenarioError as e:
        print(f"commbench: {e}", file=sys.stderr)
        return 2
    run_dir = args.out or default_run_dir(sc)
    run_id = run_dir.name
    info = _meta(sc, args.scenario, run_id)
    info["launcher"] = "commbench (embedded mpiexec, this host only)"
    info["jobs"] = []
    write_meta(run_dir, info)
    status, code = "ok", 0
    extra = ("--no-progress",) if args.no_progress else ()
    try:
        for w in sizes:
            job = launcher.launch(args.scenario, run_dir, run_id, w, extra)
            info["jobs"].append({"world_size": w, "returncode": job.returncode,
                                 "seconds": round(job.seconds, 3), "failed_case": job.failed_case,
                                 "reason": job.reason})
            if not job.ok:
                where = f" during case '{job.failed_case}'" if job.failed_case else ""
                why = f": {job.reason}" if job.reason else ""
                print(f"commbench: world size {w} failed{where}{why} (mpiexec exit {job.returncode})",
                      file=sys.stderr)
                status, code = "failed", 1
                break
    except KeyboardInterrupt:
        status, code = "interrupted", 130
        print("commbench: interrupted", file=sys.stderr)
    finally:
        info["status"] = status
        info["finished"] = dt.datetime.now(dt.timezone.utc).isoformat()
        write_meta(run_dir, info)
    kept = sum(1 for _ in iter_records(run_dir))
    print(f"# {kept} records in {run_dir / 'results.jsonl'}", file=sys.stderr)
    _after_run(run_dir)
    return code


def _after_run(run_dir: Path) -> None:
    """Print the run directory, then write the report and print its path (the last line)."""
    print(run_dir, flush=True)
    try:
        from reports.render import render_run
    except ImportError:  # a checkout without the reporter still measures
        return
    try:
        print(render_run(run_dir), flush=True)
    except Exception as e:  # the measurements are safe on disk; say what broke, keep going
        print(f"commbench: report not written: {type(e).__name__}: {e}", file=sys.stderr)


def _run_in_job(args: argparse.Namespace, sc: CollectiveScenario, sizes: tuple[int, ...]) -> int:
    from mpi4py import MPI

    from bench.runner import RunContext, run_job

    comm = MPI.COMM_WORLD
    worker_of = os.environ.get(launcher.WORKER_ENV)
    sizes = tuple(w for w in (sizes or (comm.size,)) if w <= comm.size)
    if not sizes and comm.rank == 0:
        print(f"commbench: world_sizes: none fits in this job of {comm.size} ranks",
              file=sys.stderr)
    if not sizes:
        return 2
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    fits = True
    if local.rank == 0:
        try:
            check_memory(sc, str(args.scenario), local.size, psutil.virtual_memory().available)
        except ScenarioError as e:
            print(f"commbench: {e}", file=sys.stderr)
            fits = False
    local.Free()
    if not comm.allreduce(fits, op=MPI.LAND):
        return 2
    if worker_of:
        run_dir, run_id = args.out, worker_of
    else:  # the user's own mpiexec/srun: rank 0 names the run and writes meta
        run_dir = comm.bcast(args.out or default_run_dir(sc), root=0)
        run_id = run_dir.name
        hosts = comm.gather(os.uname().nodename, root=0)
        if comm.rank == 0:
            info = _meta(sc, args.scenario, run_id)
            info.update(launcher="user's MPI job", hosts=sorted(set(hosts or [])),
                        world_size=comm.size)
            write_meta(run_dir, info)
    ctx = RunContext(run_dir, run_id, sc, sizes, progress=not args.no_progress)
    try:
        run_job(ctx)
    except KeyboardInterrupt:
        os._exit(130)  # peers are being torn down too; skip MPI_Finalize, records are on disk
    except Exception as e:  # one rank's failure must end the job, not leave peers hanging
        sys.stderr.write(f"commbench: rank {comm.rank}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        comm.Abort(1)
    if not worker_of and comm.rank == 0:
        from bench.records import read_meta

        info = read_meta(run_dir)
        info.update(status="ok", finished=dt.datetime.now(dt.timezone.utc).isoformat())
        write_meta(run_dir, info)
        _after_run(run_dir)
    return 0


register("run", "run a scenario (self-launched, or inside an MPI job)", configure, handle)
