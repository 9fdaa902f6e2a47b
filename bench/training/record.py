"""Training result records: one per (strategy, model, world size), in the run's results.jsonl."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.measure.stats import summarize
from bench.store import kinds
from bench.store.records import iter_records
from bench.store.resume import done_training
from bench.training.scenario import StrategySpec, TrainingScenario

if TYPE_CHECKING:  # the launcher writes failed records without importing torch (measure does)
    from bench.training.measure import CaseResult, Idle

TIMER = ("time.perf_counter_ns around each step, after a barrier and a device sync, ended by a "
         "device sync; max over ranks per step")
IDLE = ("per rank: time in the schedule's point-to-point waits (perf_counter_ns around "
        "torch.distributed.pipelining's _wait_batch_p2p) + (the kept step, the max over ranks, "
        "- the rank's own step); mean per timed step, and its fraction of the kept steps")
BUBBLE = ("replay of the forward/backward order torch's schedule runs on each rank, equal stages, "
          "backward = 2 forwards, free communication: (p-1)/(m+p-1) for GPipe and 1F1B, "
          "(p-1)/(v*m+p-1) for interleaved 1F1B with m >= p")
HELD = ("params", "grads", "optim")  # HeldBytes' fields, in the record's order
SCALING = ("weak: samples_per_s(N) / (N * samples_per_s(1)) of the same strategy and model, "
           "fixed batch_size per data-parallel replica (= T1/TN for pure data parallelism; "
           "ranks of one tensor/pipeline replica share its batch)")


def base(sc: TrainingScenario, spec: StrategySpec, model: str, world: int, status: str,
         extra: dict[str, Any]) -> dict[str, Any]:
    return kinds.training(status=status, strategy=spec.label, strategy_name=spec.name,
                          model=model, world_size=world, batch_size_per_replica=sc.batch_size,
                          strategy_options=spec.model_dump(mode="json"), time_unix=time.time(),
                          **extra)


def failed(sc: TrainingScenario, spec: StrategySpec, model: str, world: int, error: str,
           extra: dict[str, Any]) -> dict[str, Any]:
    return {**base(sc, spec, model, world, "failed", extra), "error": error}


def _baseline(run_dir: Path, label: str, model: str) -> float | None:
    for rec in iter_records(run_dir):
        if (rec.get("kind") == "training" and rec.get("status") == "ok" and rec["world_size"] == 1
                and rec["strategy"] == label and rec["model"] == model):
            return float(rec["samples_per_s"])
    return None


def measured(sc: TrainingScenario, spec: StrategySpec, model: str, world: int, res: CaseResult,
             reference: list[float] | None, run_dir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    s = summarize(np.asarray(res.samples_ms))
    sps = res.global_batch / (s.median / 1e3)
    base1 = sps if world == 1 else _baseline(run_dir, spec.label, model)
    r0 = res.ranks[0]
    comm = [r.comm for r in res.ranks]
    diff = (max(abs(a - b) for a, b in zip(res.losses, reference)) if reference else None)
    return {
        **base(sc, spec, model, world, "ok", extra),
        "global_batch": res.global_batch, "warmup": sc.warmup, "iters": s.n,
        **s.as_dict("step_time_ms_"),
        "samples_per_s": sps,
        "tokens_per_s": res.tokens_per_step / (s.median / 1e3) if res.tokens_per_step else None,
        "scaling_efficiency": sps / (world * base1) if base1 else None,
        "scaling": SCALING,
        **{f"mem_{k}_bytes": max(getattr(r.held, k) for r in res.ranks) for k in HELD},
        "mem_peak_bytes": max(r.peak for r in res.ranks),
        "mem_peak_above_start_bytes": max(r.peak_above_start for r in res.ranks),
        "mem_activations_bytes": max(r.activations for r in res.ranks),
        "mem_activations_bytes_by_rank": [r.activations for r in res.ranks],
        "mem_activations_method": "peak bytes held for backward (saved_tensors_hooks, by "
                                  "storage, parameters excluded) in the counted step",
        "mem_rank_aggregate": "max over ranks (per-rank values in *_by_rank)",
        "mem_peak_method": res.peak_method,
        **{f"mem_{k}_bytes_by_rank": [getattr(r.held, k) for r in res.ranks] for k in HELD},
        "comm_bytes_per_step": max(c.total for c in comm) if all(comm) else None,
        "comm_bytes_by_rank": [c.total for c in comm] if all(comm) else None,
        "comm_by_type": r0.comm.bytes if r0.comm else None,
        "comm_calls_by_type": r0.comm.calls if r0.comm else None,
        "comm_by_type_by_rank": [c.bytes for c in comm] if all(comm) else None,
        "comm_method": "TorchDispatchMode over c10d/functional collectives, last warm-up step; "
                       "bytes = nccl-tests size S per call (sends only for p2p)",
        "loss": res.losses,
        "loss_reference": reference,
        "loss_max_abs_diff": diff,
        "timer": TIMER,
        "samples_ms": [round(x, 4) for x in res.samples_ms],
        **(idle_fields(res.idle) if res.idle else {}),
        **(routing_fields(res) if res.ranks[0].routing else {}),
    }


def idle_fields(idle: Idle) -> dict[str, Any]:
    """A pipeline record's idle time per stage and its schedule's modelled bubble."""
    return {
        "stage_idle_ms_by_rank": [round(x, 4) for x in idle.ms_by_rank],
        "stage_idle_fraction_by_rank": idle.fraction_by_rank,
        "stage_wait_ms_by_rank": [round(x, 4) for x in idle.wait_ms_by_rank],
        "stage_waits_per_step_by_rank": idle.waits_per_step,
        "stage_idle_method": IDLE,
        "bubble_fraction_model": idle.bubble_model,
        "bubble_model_method": BUBBLE,
    }


IMBALANCE = ("router's load per step: assignments per expert (tokens x top_k, before capacity) "
             "summed over the ranks, max / mean, the largest over MoE layers")


def routing_fields(res: CaseResult) -> dict[str, Any]:
    """A mixture of experts' routing: its load imbalance and drops per step, and the counted
    step's kept assignments per (layer, rank, expert), what its all_to_alls moved."""
    steps = len(res.ranks[0].routing)
    imbalance, dropped = [], []
    for s in range(steps):
        worst, routed, kept = 0.0, 0, 0
        for layer in range(len(res.ranks[0].routing[s])):
            load = [sum(col) for col in zip(*(r.routing[s][layer][0] for r in res.ranks))]
            worst = max(worst, max(load) * len(load) / sum(load))
            routed += sum(load)
            kept += sum(sum(r.routing[s][layer][1]) for r in res.ranks)
        imbalance.append(round(worst, 6))
        dropped.append(round(1 - kept / routed, 6))
    last = [[list(r.routing[-1][layer][1]) for r in res.ranks]
            for layer in range(len(res.ranks[0].routing[-1]))]
    return {"moe_imbalance": imbalance, "moe_imbalance_method": IMBALANCE,
            "moe_dropped_fraction": dropped, "moe_dispatch_by_layer": last}


# what the self-launcher tells a training job's ranks (bench.training.launch sets, runner reads)
CASE_START_ENV = "COMMBENCH_CASE_START"
BACKEND_ENV = "COMMBENCH_TRAINING_BACKEND"  # the self-launcher's choice for its whole sweep


def recorded(run_dir: Path, cases: list[tuple[StrategySpec, str]], world: int) -> set[int]:
    """Indices of ``cases`` at ``world`` ranks that have a record (measured or failed) in RUN."""
    done = done_training(run_dir)
    return {i for i, (spec, model) in enumerate(cases) if (spec.label, model, world) in done}
