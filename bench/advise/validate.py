"""Predicted against measured: the strategies a training run measured, priced at the run's own
world sizes from its world-size-1 steps (``advise --from RUN``).

Compute of a strategy comes from the world-size-1 record of the same strategy and model (its
wrapper's own cost included), else from ``tensor``'s for a layout with tensor parallelism
(hybrid: DTensor's cost per op is most of a small model's step), else from plain ``ddp``'s;
the batch per replica and fp32 precision are the run's. A record of the same strategy at one
rank carries its checkpointing and autocast already (no knob factor on top); ``ps`` has no
world-size-1 record and takes ``ddp``'s (a worker's forward and backward). Pipeline idle per stage is not in
training records (they carry the step, not per-stage timelines): the bubble is predicted, not
checked here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.advise.comm import Bytes
from bench.advise.compute import Measured
from bench.advise.evaluate import Job, Result, evaluate
from bench.advise.shape import Shape, shape_of
from bench.advise.strategies import as_layout
from bench.advise.timing import Timer
from bench.records import iter_records
from bench.training.analytic import FP32


@dataclass(frozen=True)
class Pair:
    model: str
    strategy: str
    world: int
    batch: int  # per replica
    measured_s: float
    predicted: Result


def training_records(run: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(run) if r.get("kind") == "training"
            and r.get("status") == "ok"]


def single_rank(recs: list[dict[str, Any]], model: str, strategy: str,
                fallback: tuple[str, ...] = ("ddp",)) -> dict[str, Any] | None:
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
        spec = StrategySpec.model_validate(r["strategy_options"])
        try:
            lay = as_layout(spec.name, spec, r["world_size"])
        except ValueError:  # selective checkpointing: not modelled
            continue
        one = single_rank(recs, r["model"], r["strategy"],
                          ("tensor", "ddp") if lay.tensor > 1 else ("ddp",))
        if one is None:
            continue
        shape: Shape = shape_of(MODELS.get(r["model"]))
        batch = int(r["batch_size_per_replica"])
        compute = Measured(one["step_time_ms_median"] / 1e3, f"{one['strategy']} at 1 rank",
                           knobs_included=one["strategy"] == r["strategy"])
        job = Job(shape, batch, FP32, compute, timer, limit, Bytes(4, 4, 4))
        yield Pair(r["model"], r["strategy"], r["world_size"], batch,
                   r["step_time_ms_median"] / 1e3, evaluate(job, lay))
