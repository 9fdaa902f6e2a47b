"""Predicted against measured (``advise --from RUN``): a training run's strategies priced at its
world sizes from its world-size-1 steps (docs/advise.md, Compute), and its pipeline records'
measured idle per stage beside the modelled bubble.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.advise.comm import Bytes
from bench.advise.compute import Measured
from bench.advise.evaluate import Job, Result, evaluate
from bench.advise.layout import as_layout
from bench.advise.routing import of_record
from bench.advise.shape import Shape, shape_of
from bench.advise.timing import Timer
from bench.store import kinds
from bench.store.records import iter_records
from bench.training.analytic import FP32

PLAIN = "ddp"  # the plain data-parallel strategy whose one-rank step is bare compute


@dataclass(frozen=True)
class Pair:
    model: str
    strategy: str
    world: int
    measured_s: float
    predicted: Result


@dataclass(frozen=True)
class IdleCheck:
    model: str
    strategy: str
    world: int
    step_ms: float  # median step
    idle_ms: list[float]  # per stage (rank), mean per timed step
    measured: list[float]  # idle fraction of the step, per stage (rank)
    modelled: float  # the schedule's bubble fraction

    @property
    def mean(self) -> float:
        return sum(self.measured) / len(self.measured)


def idle_checks(recs: list[dict[str, Any]]) -> list[IdleCheck]:
    """Every pipeline record of two or more ranks with its idle time per stage, in run order."""
    return [IdleCheck(r["model"], r["strategy"], int(r["world_size"]),
                      float(r["step_time_ms_median"]), list(r["stage_idle_ms_by_rank"]),
                      list(r["stage_idle_fraction_by_rank"]), float(r["bubble_fraction_model"]))
            for r in recs if r["world_size"] >= 2 and r.get("stage_idle_fraction_by_rank")]


def idle_lines(checks: list[IdleCheck]) -> list[str]:
    """The table ``advise --from`` prints: measured idle fraction per stage beside the model."""
    if not checks:
        return []
    out = ["## pipeline bubble: measured idle fraction of the step per stage (rank 0 first) "
           "against the schedule's modelled bubble",
           f"{'model':<10} {'strategy':<28} {'ranks':>5} {'step ms':>8} "
           f"{'idle fraction per stage':<27} {'mean':>5} {'model':>5}"]
    for c in checks:
        per = " ".join(f"{x:.2f}" for x in c.measured)
        out.append(f"{c.model:<10} {c.strategy:<28} {c.world:>5} {c.step_ms:>8.3g} {per:<27} "
                   f"{c.mean:>5.2f} {c.modelled:>5.2f}")
    return out


def idle_record(c: IdleCheck, context: dict[str, Any]) -> dict[str, Any]:
    """One ``advice`` record of a pipeline case's measured idle against its modelled bubble."""
    return kinds.advice(predicted=False, model=c.model, world_size=c.world, bubble_check=True,
                        strategy=c.strategy, measured_step_time_ms=c.step_ms,
                        stage_idle_ms_by_rank=c.idle_ms, stage_idle_fraction_by_rank=c.measured,
                        stage_idle_fraction_mean=c.mean, bubble_fraction_model=c.modelled,
                        **context)


def training_records(run: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(run) if r.get("kind") == "training"
            and r.get("status") == "ok"]


def single_rank(recs: list[dict[str, Any]], model: str, strategy: str,
                fallback: tuple[str, ...] = (PLAIN,)) -> dict[str, Any] | None:
    """The world-size-1 record of ``strategy`` on ``model``, else of the first ``fallback``."""
    for label in (strategy, *fallback):
        for r in recs:
            if r["world_size"] == 1 and r["model"] == model and r["strategy"] == label:
                return r
    return None


def pairs(recs: list[dict[str, Any]], timer: Timer, limit: float | None) -> Iterator[Pair]:
    from bench.models import MODELS
    from bench.training.scenario import StrategySpec

    for r in recs:
        if r["world_size"] < 2:
            continue
        spec = StrategySpec.of_record(r["strategy_options"])
        try:
            lay = as_layout(spec, r["world_size"])
        except ValueError:  # selective checkpointing: not modelled
            continue
        one = single_rank(recs, r["model"], r["strategy"],
                          ("tensor", PLAIN) if lay.tensor > 1 else (PLAIN,))
        if one is None:
            continue
        shape: Shape = dataclasses.replace(shape_of(MODELS.get(r["model"])),
                                           routing=of_record(r))  # a MoE's measured router
        batch = int(r["batch_size_per_replica"])
        step = one["step_time_ms_median"] / 1e3
        plain = single_rank(recs, r["model"], PLAIN, ())
        fixed = 0.0
        if (lay.tensor > 1 or lay.pipeline > 1) and plain is not None and plain is not one:
            fixed = max(0.0, step - plain["step_time_ms_median"] / 1e3)
        compute = Measured(step, f"{one['strategy']} at 1 rank",
                           knobs_included=one["strategy"] == r["strategy"], fixed_s=fixed)
        job = Job(shape, batch, FP32, compute, timer, limit, Bytes.of(FP32))
        yield Pair(r["model"], r["strategy"], r["world_size"], r["step_time_ms_median"] / 1e3,
                   evaluate(job, lay))
