"""Runs a training scenario's cases inside one torch.distributed job (ours or the user's): every
rank runs the same cases in order, rank 0 writes each record. A case that raises or outlives
``case_timeout_s`` ends the job with a one-line error; ranks leave with ``os._exit`` once records
are on disk (torch ranks occasionally abort in interpreter shutdown)."""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from bench.argtypes import UsageError
from bench.cli import bad_input
from bench.launch import inflight
from bench.launch.launcher import oversubscribed
from bench.launch.watchdog import Watchdog
from bench.scenario_base import ScenarioError
from bench.store.records import ResultWriter
from bench.training import record
from bench.training.distenv import init_from_env
from bench.training.measure import CaseResult, Protocol, run_case
from bench.training.record import BACKEND_ENV, CASE_START_ENV, recorded
from bench.training.scenario import StrategySpec, TrainingScenario, check_case
from bench.training.strategy import TrainContext
from bench.training.trainer import reference_losses


@dataclass(frozen=True)
class JobContext:
    run_dir: Path
    run_id: str
    scenario: TrainingScenario
    world_sizes: tuple[int, ...]
    self_launched: bool
    progress: bool = True
    resume: bool = False  # skip cases that have a record in results.jsonl


def run_job(ctx: JobContext) -> int:
    """Run this job's cases; exits the process (``os._exit``) when done."""
    sc = ctx.scenario
    try:
        chosen = os.environ.get(BACKEND_ENV) if ctx.self_launched else None
        device, backend = init_from_env(chosen or sc.backend, sc.case_timeout_s)
    except ScenarioError as e:  # the same on every rank: one line from rank 0
        _leave(bad_input(e, "run") if os.environ.get("RANK", "0") == "0" else 2)
    except RuntimeError as e:  # this rank's process group did not start
        print(f"commbench: rank {os.environ.get('RANK', '?')}: {e}", file=sys.stderr)
        _leave(2)
    rank, world = dist.get_rank(), dist.get_world_size()
    # torch's own objects (a few hundred thousand) never become garbage: kept out of every later
    # collection, the full gc.collect() between cases costs milliseconds instead of ~0.4 s
    gc.freeze()
    if ctx.world_sizes and world not in ctx.world_sizes:
        why = UsageError(f"world size {world} is not among the scenario's {list(ctx.world_sizes)}")
        _leave(bad_input(why, "run") if rank == 0 else 2)
    start = int(os.environ.get(CASE_START_ENV, "0"))
    cases = sc.cases(world)
    writer = ResultWriter(ctx.run_dir) if rank == 0 else None
    extra = {"run_id": ctx.run_id, "scenario": sc.name, "backend": backend,
             "device": str(device.type), "tf32": False if device.type == "cuda" else None,
             "oversubscribed": oversubscribed(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))}
    refs: dict[tuple[str, int], list[float]] = {}
    dog = Watchdog(rank, _leave, world_size=world, marker=ctx.run_dir if rank == 0 else None)
    skip = recorded(ctx.run_dir, cases, world) if ctx.resume else set()  # a resumed run
    for i in range(start, len(cases)):
        spec, model = cases[i]
        label = f"{spec.label} {model} p={world}"
        if i in skip:
            continue
        if rank == 0 and ctx.progress:
            print(f"[{i + 1}/{len(cases)}] {label}", file=sys.stderr, flush=True)
        dog.arm_case(label, sc.case_timeout_s, index=i)
        try:
            rec = _one_case(ctx, spec, model, world, rank, device, backend, refs, extra)
        except Exception as e:
            msg = f"{type(e).__name__}: {e}".splitlines()[0]
            sys.stderr.write(f"commbench: rank {rank}: case '{label}' failed: {msg}\n")
            if not ctx.self_launched:
                with ResultWriter(ctx.run_dir) as w:
                    w.write(record.failed(sc, spec, model, world, f"rank {rank}: {msg}", extra))
            _leave(1)
        dog.disarm()
        if writer and rec:
            writer.write(rec)
            _print_row(rec)
        gc.collect()  # the case's tensors freed before the next case's memory is measured
        gc.freeze()  # what survived (modules the case imported, caches) is never traversed again
        dist.barrier()
    if writer:
        writer.close()
        inflight.clear(ctx.run_dir)
    dist.destroy_process_group()
    _leave(0)
    return 0


def _one_case(ctx: JobContext, spec: StrategySpec, model_name: str, world: int, rank: int,
              device: torch.device, backend: str, refs: dict[tuple[str, int], list[float]],
              extra: dict[str, Any]) -> dict[str, Any] | None:
    from bench.models import MODELS

    sc = ctx.scenario
    model = MODELS.get(model_name)
    check_case(spec, model, world, sc.batch_size)
    tctx = TrainContext(spec, model, rank, world, device, backend, sc.seed, sc.lr)
    proto = Protocol(sc.warmup, sc.steps, sc.batch_size, sc.seed)
    res = _train(tctx, proto)  # the trainer is gone before the reference model is built
    if rank != 0:
        return None
    ref = None
    if sc.reference:
        key = (model_name, res.global_batch)
        if key not in refs:
            gc.collect()  # the trainer's reference cycles (hooks, FSDP state) hold its tensors
            refs[key] = reference_losses(model, res.global_batch, proto.total, sc.seed,
                                         sc.lr, device)
        ref = refs[key]
    return record.measured(sc, spec, model_name, world, res, ref, ctx.run_dir, extra)


def _train(tctx: TrainContext, proto: Protocol) -> CaseResult:
    trainer = tctx.spec.strategy.build(tctx)
    try:
        return run_case(trainer, tctx.model, proto, tctx.device,
                        f"{tctx.spec.name}-{tctx.model.name}-p{tctx.world}")
    finally:
        trainer.close()


def _print_row(rec: dict[str, Any]) -> None:
    diff = rec["loss_max_abs_diff"]
    print(f"{rec['strategy']:>24} {rec['model']:>10} p={rec['world_size']:<3} "
          f"step {rec['step_time_ms_median']:9.2f} ms  {rec['samples_per_s']:9.1f} samples/s  "
          f"comm {rec['comm_bytes_per_step'] or 0:>10} B  "
          f"dloss {diff if diff is None else f'{diff:.1e}'}", flush=True)


def _leave(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
