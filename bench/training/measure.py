"""The training harness, the one place that owns the clock for training cases: ``warmup``
untimed steps, ``steps`` steps each timed alone after a barrier and a device synchronisation
(the max over ranks kept), then one untimed step that counts communication and saved
activations (last, so DDP has rebuilt its buckets); pipeline trainers (:class:`Waits`) add idle
time per stage, mixture-of-experts trainers (:class:`Routes`) their routing. docs/training.md
(What is measured, and how)."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from bench.advise.calls import Counted
from bench.measure.timer import CLOCK  # the harness's clock
from bench.models.base import ModelSpec
from bench.training.comm import CommCounter
from bench.training.memory import HeldBytes, PeakMemory, SavedActivations, held_bytes
from bench.training.strategy import Trainer
from bench.training.tracing import traced


@dataclass(frozen=True)
class Protocol:
    warmup: int
    steps: int
    batch_size: int  # per data-parallel replica
    seed: int

    @property
    def total(self) -> int:
        """Steps run: warm-up, the timed steps, the counted step."""
        return self.warmup + 1 + self.steps


@typing.runtime_checkable
class Waits(typing.Protocol):
    """A trainer that times its waits on other ranks (pipeline stages)."""

    bubble: float  # its schedule's bubble fraction, modelled

    def take_waits(self) -> tuple[int, int]:
        """(nanoseconds, waits) since the last call."""
        ...


LayerRouting = tuple[tuple[int, ...], tuple[int, ...]]  # (routed, kept) assignments per expert


@typing.runtime_checkable
class Routes(typing.Protocol):
    """A trainer of a mixture of experts that reports its routing (expert parallelism)."""

    def routing(self) -> list[LayerRouting]:
        """This rank's assignments per expert in each MoE layer of the last step."""
        ...


@dataclass(frozen=True)
class RankResult:
    """What one rank measured; gathered to rank 0."""

    held: HeldBytes
    comm: Counted | None
    peak: int
    peak_above_start: int
    activations: int  # peak bytes held for backward in the counted step
    step_ns: tuple[int, ...] = ()  # this rank's own time per timed step (Waits trainers)
    wait_ns: tuple[int, ...] = ()  # of which in point-to-point waits
    waits: int = 0  # waits per timed step
    routing: tuple[tuple[LayerRouting, ...], ...] = ()  # per step, per MoE layer (Routes trainers)


@dataclass(frozen=True)
class Idle:
    """Idle time per rank of a pipeline case, over its timed steps (see the module)."""

    ms_by_rank: list[float]  # mean per timed step
    fraction_by_rank: list[float]  # idle / the kept step time, summed over the timed steps
    wait_ms_by_rank: list[float]  # the waits alone, mean per timed step
    waits_per_step: list[int]  # wait calls per step, per rank
    bubble_model: float

    @staticmethod
    def of(ranks: list[RankResult], bubble: float) -> Idle:
        steps = len(ranks[0].step_ns)
        kept = [max(r.step_ns[k] for r in ranks) for k in range(steps)]
        idle = [sum(r.wait_ns[k] + kept[k] - r.step_ns[k] for k in range(steps)) for r in ranks]
        total = sum(kept)
        return Idle([i / steps / 1e6 for i in idle], [i / total if total else 0.0 for i in idle],
                    [sum(r.wait_ns) / steps / 1e6 for r in ranks],
                    [r.waits for r in ranks], bubble)


@dataclass(frozen=True)
class CaseResult:
    global_batch: int
    tokens_per_step: int
    losses: list[float]
    samples_ms: list[float]  # max over ranks, per timed step
    ranks: list[RankResult]
    peak_method: str
    idle: Idle | None = None  # pipeline trainers only


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _barrier(device: torch.device) -> None:
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index or 0])
    else:
        dist.barrier()


def run_case(trainer: Trainer, model: ModelSpec, proto: Protocol, device: torch.device,
             trace_name: str | None = None) -> CaseResult:
    """Train ``warmup + steps`` steps; every rank returns the same :class:`CaseResult`.
    ``trace_name``: the counted step's profiler trace file (:mod:`bench.training.tracing`)."""
    peak = PeakMemory(device)
    peak.start()
    global_batch = proto.batch_size * trainer.dp_degree
    waiting = trainer if isinstance(trainer, Waits) else None
    routes = trainer if isinstance(trainer, Routes) else None
    losses: list[float] = []
    samples: list[float] = []
    own: list[int] = []  # Waits trainers: this rank's step and its waits, per timed step
    waited: list[int] = []
    routing: list[tuple[LayerRouting, ...]] = []
    comm: Counted | None = None
    acts = tokens = calls = 0
    for s in range(proto.total):
        batch = model.batch(global_batch, s, proto.seed).to(device)  # copied before the clock
        tokens = batch.tokens
        if s < proto.warmup:
            loss = trainer.step(batch)
        elif s == proto.total - 1:
            with traced(trace_name, dist.get_rank()), CommCounter() as counter, \
                    SavedActivations() as saved:
                loss = trainer.step(batch)
            comm, acts = counter.count, saved.peak
        else:
            _barrier(device)
            _sync(device)
            if waiting:
                waiting.take_waits()  # the warm-up's and the barrier's are not this step's
            t0 = CLOCK()
            loss = trainer.step(batch)
            _sync(device)
            ns = CLOCK() - t0
            samples.append(ns / 1e6)
            if waiting:
                wait_ns, calls = waiting.take_waits()
                own.append(ns)
                waited.append(wait_ns)
        losses.append(math.nan if loss is None else loss)
        if routes:
            routing.append(tuple(routes.routing()))
    mine = RankResult(held_bytes(trainer), comm, *peak.peak(), activations=acts,
                      step_ns=tuple(own), wait_ns=tuple(waited), waits=calls,
                      routing=tuple(routing))
    ranks: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    idle = Idle.of(ranks, waiting.bubble) if waiting and own else None
    return CaseResult(global_batch, tokens, _mean_loss(losses, device), _max_samples(samples, device),
                      ranks, peak.method, idle)


def _mean_loss(losses: list[float], device: torch.device) -> list[float]:
    t = torch.tensor(losses, dtype=torch.float64, device=device)
    seen = (~t.isnan()).to(torch.float64)
    both = torch.stack([torch.nan_to_num(t, nan=0.0), seen])
    dist.all_reduce(both)
    return (both[0] / both[1]).tolist()


def _max_samples(samples: list[float], device: torch.device) -> list[float]:
    t = torch.tensor(samples, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()
