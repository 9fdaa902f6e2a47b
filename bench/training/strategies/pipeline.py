"""``pipeline``: torch.distributed.pipelining with GPipe, 1F1B or interleaved 1F1B over
``world * stages_per_rank`` stages balanced by parameter count (:mod:`bench.training.stages`);
rank r holds stages r, r + world, ... The whole batch is one replica, cut into ``microbatches``.
Idle time per stage (:func:`timed_waits`) and the schedule's bubble (:func:`bubble_fraction`):
docs/training.md (Pipeline idle per stage)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from bench.advise.comm import pipeline_calls
from bench.advise.layout import Layout
from bench.training.analytic import Acts, Held, numel
from bench.training.stages import (
    Schedule,
    check_pipeline,
    in_flight,
    local_stages,
    piece_sizes,
    rank_pieces,
    stage_layers,
    stage_pieces,
    stage_starts,
)
from bench.training.strategy import Strategy, TrainContext, Trainer, register

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.distributed.pipelining import ScheduleInterleaved1F1B

    from bench.models.base import Batch, ModelSpec
    from bench.training.analytic import Param

SINGLE_STAGE = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}  # one stage per rank


@dataclass(frozen=True)
class Options:
    schedule: Schedule = "1f1b"
    microbatches: Annotated[int, Field(ge=1)] = 4
    stages_per_rank: Annotated[int, Field(ge=1)] | None = None  # default 2 for interleaved, else 1

    @property
    def per_rank(self) -> int:
        """Stages per rank, the default resolved."""
        if self.stages_per_rank is not None:
            return self.stages_per_rank
        return 2 if self.schedule == "interleaved" else 1


FORWARD, BACKWARD = "F", "B"
COST = {FORWARD: 1, BACKWARD: 2}  # backward = two forwards (1 or 3 give the same fractions)
Action = tuple[str, int, int]  # (F or B, stage, microbatch)


def torch_schedules() -> ModuleType:
    """``torch.distributed.pipelining.schedules``, imported only where a pipeline needs it."""
    from torch.distributed.pipelining import schedules

    return schedules


@dataclass
class WaitClock:
    """Nanoseconds this rank spent in the schedule's point-to-point waits since the last take,
    and how many of those waits had works to wait on."""

    ns: int = 0
    waits: int = 0

    def take(self) -> tuple[int, int]:
        """(nanoseconds, waits) since the last call; resets both."""
        out = (self.ns, self.waits)
        self.ns, self.waits = 0, 0
        return out


@contextlib.contextmanager
def timed_waits(clock: WaitClock) -> Iterator[None]:
    """Time every ``_wait_batch_p2p`` the schedules call inside the block into ``clock``."""
    schedules = torch_schedules()
    original: Callable[[list[Any]], None] = schedules._wait_batch_p2p
    now = time.perf_counter_ns

    def wait(works: list[Any]) -> None:
        if not works:  # the schedules also "wait" on empty lists (a first or last stage)
            return original(works)
        t0 = now()
        try:
            original(works)
        finally:
            clock.ns += now() - t0
            clock.waits += 1

    schedules._wait_batch_p2p = wait
    try:
        yield
    finally:
        schedules._wait_batch_p2p = original


def single_stage_order(schedule: str, stage: int, stages: int, m: int) -> list[Action]:
    """The actions GPipe's or 1F1B's ``_step_microbatches`` runs on ``stage``, in order."""
    if schedule == "gpipe":
        return [(FORWARD, stage, i) for i in range(m)] + [(BACKWARD, stage, i) for i in range(m)]
    warmup = min(m, stages - stage)  # torch: the last stage warms up with 1, the first with p
    out: list[Action] = [(FORWARD, stage, i) for i in range(warmup)]
    f = warmup
    for b in range(m):
        out.append((BACKWARD, stage, b))
        if f < m:
            out.append((FORWARD, stage, f))
            f += 1
    return out


def interleaved_orders(schedule: ScheduleInterleaved1F1B) -> list[list[Action]]:
    """Each rank's forwards and backwards from torch's own ``pipeline_order`` (what its runtime
    executes, idle slots and communication actions left out)."""
    computation = torch_schedules()._ComputationType
    kinds = {computation.FORWARD: FORWARD, computation.FULL_BACKWARD: BACKWARD}
    return [[(kinds[a.computation_type], a.stage_index, int(a.microbatch_index or 0))
             for a in schedule.pipeline_order[r] if a is not None and a.computation_type in kinds]
            for r in range(len(schedule.pipeline_order))]


def replay(orders: list[list[Action]], stages: int) -> Fraction:
    """The bubble fraction of the step when every rank runs its ``orders`` as soon as its inputs
    are there: (makespan - busy) / makespan, the largest over ranks, exactly."""
    done: dict[tuple[str, int, int], int] = {}
    free = [0] * len(orders)
    nxt = [0] * len(orders)
    left = sum(len(o) for o in orders)
    while left:
        moved = False
        for r, order in enumerate(orders):
            while nxt[r] < len(order):
                kind, s, mb = order[nxt[r]]
                dep = ((FORWARD, s - 1, mb) if kind == FORWARD and s > 0 else
                       (BACKWARD, s + 1, mb) if kind == BACKWARD and s < stages - 1 else
                       (FORWARD, s, mb) if kind == BACKWARD else None)
                if dep is not None and dep not in done:
                    break
                start = max(free[r], done[dep] if dep else 0)
                free[r] = done[(kind, s, mb)] = start + COST[kind]
                nxt[r] += 1
                left -= 1
                moved = True
        if not moved:
            raise ValueError("the schedule's order waits on itself")
    span = max(free)
    busy = min(sum(COST[k] for k, _, _ in o) for o in orders)
    return Fraction(span - busy, span)


def bubble_fraction(schedule: str, ranks: int, microbatches: int, stages_per_rank: int = 1
                    ) -> Fraction:
    """The schedule's bubble fraction on ``ranks`` stages (GPipe and 1F1B: the order each of
    them runs; interleaved: torch's ``pipeline_order``, built without a process group)."""
    n = ranks * stages_per_rank
    if schedule in SINGLE_STAGE:
        orders = [single_stage_order(schedule, s, n, microbatches) for s in range(n)]
    else:
        orders = interleaved_orders(_interleaved_plan(ranks, microbatches, stages_per_rank))
    return replay(orders, n)


def _interleaved_plan(ranks: int, m: int, v: int) -> ScheduleInterleaved1F1B:
    """torch's interleaved schedule object with only what its ``pipeline_order`` needs (its
    ``__init__`` wants live stages); the same computation as its constructor."""
    plan = object.__new__(torch_schedules().ScheduleInterleaved1F1B)
    plan.pp_group_size, plan.n_local_stages, plan._n_microbatches = ranks, v, m
    plan.number_of_rounds = max(1, m // ranks)
    plan.microbatches_per_round = m // plan.number_of_rounds
    plan.pipeline_order = {r: plan._calculate_single_rank_operations(r) for r in range(ranks)}
    return plan


class PipelineTrainer(Trainer):
    def __init__(self, ctx: TrainContext) -> None:
        from torch import nn
        from torch.distributed.pipelining import PipelineStage

        self.ctx = ctx
        opts: Options = ctx.opts
        n = ctx.world * opts.per_rank
        full = ctx.build_model()
        starts, self.stage_ids = _cut(ctx.model, opts, ctx.world, ctx.rank)
        self.mods = [nn.Sequential(*full.pieces[starts[s]:starts[s + 1]]).to(ctx.device)
                     for s in self.stage_ids]
        schedules = torch_schedules()
        stages = [PipelineStage(m, s, n, ctx.device) for m, s in zip(self.mods, self.stage_ids)]
        self.amp = ctx.amp
        loss = functools.partial(self.amp.loss, ctx.model.loss)  # fp32 loss, scaled for fp16
        one = SINGLE_STAGE.get(opts.schedule)
        make = getattr(schedules, one or "ScheduleInterleaved1F1B")
        self.schedule = make(stages[0] if one else stages, opts.microbatches, loss_fn=loss)
        self.bubble = float(bubble_fraction(opts.schedule, ctx.world, opts.microbatches,
                                            opts.per_rank))
        self.first, self.last = 0 in self.stage_ids, n - 1 in self.stage_ids
        self.opt = ctx.optimizer([p for m in self.mods for p in m.parameters()])
        self.waits = WaitClock()
        self.take_waits = self.waits.take  # what measure.Waits reads after each step

    def step(self, batch: Batch) -> float | None:
        import torch

        dev = self.ctx.device
        self.opt.zero_grad(set_to_none=True)
        args = (batch.inputs.to(dev),) if self.first else ()
        losses: list[torch.Tensor] = []
        kw = {"target": batch.targets.to(dev), "losses": losses} if self.last else {}
        with timed_waits(self.waits):
            self.schedule.step(*args, **kw)
        self.amp.unscale(p for m in self.mods for p in m.parameters())
        self.opt.step()
        if not self.last:
            return None
        return float(torch.stack(losses).detach().mean()) / self.amp.scale

    def modules(self) -> list[nn.Module]:
        return list(self.mods)


def _cut(model: ModelSpec, opts: Options, n: int, r: int) -> tuple[tuple[int, ...], list[int]]:
    """The stages' first pieces (:func:`stage_starts`) and rank ``r``'s stages."""
    return stage_starts(piece_sizes(model), n * opts.per_rank), local_stages(opts.per_rank, r, n)


def held(model: ModelSpec, opts: Options, ps: list[Param], n: int, r: int) -> Held:
    mine = rank_pieces(piece_sizes(model), opts.per_rank, r, n)
    local = [numel(p.shape) for p in ps if p.piece in mine]
    return Held(local, local, local)


def acts(model: ModelSpec, opts: Options, n: int, r: int) -> Acts:
    """Rank ``r`` holds its largest stage's layers for each stage forward in flight at its peak
    (:func:`bench.training.stages.in_flight`: the first rank the most); exact with one stage per
    rank, an upper bound of :func:`bench.training.stages.peak_held` when interleaved."""
    starts, stages = _cut(model, opts, n, r)
    return Acts(microbatches=opts.microbatches,
                layers=max(stage_layers(starts, stages, model.config.layers)),
                in_flight=in_flight(opts.schedule, n, opts.microbatches, opts.per_rank, r),
                pieces=stage_pieces(starts, stages))


register(Strategy(
    "pipeline", "Pipeline parallel (GPipe, 1F1B, interleaved 1F1B) over balanced stages",
    PipelineTrainer, held, pipeline_calls,
    lambda opts, world: Layout(pipeline=world, microbatches=opts.microbatches,
                               schedule=opts.schedule, stages_per_rank=opts.per_rank),
    Options, short="schedule", label=lambda o: f"{o.schedule},m={o.microbatches}",
    check=lambda opts, model, world, batch: check_pipeline(
        world, opts.per_rank, opts.schedule, opts.microbatches, model.num_pieces, batch),
    acts=acts, order=5, table="pipeline:1f1b", needs_shape=True))
