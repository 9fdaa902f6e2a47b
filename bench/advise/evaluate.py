"""One layout priced: its calls timed on their groups, compute, memory, the step (the slowest
pipeline rank's) and its throughput and scaling efficiency. A layout's priced calls, compute and
model states are shared by its knob variants (:attr:`Job.cache`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.advise.calls import Call
from bench.advise.comm import Bytes, CommContext, axis_calls, layout_calls, representative_stages
from bench.advise.compute import Compute, factor
from bench.advise.interference import Measured
from bench.advise.layout import Layout
from bench.advise.memory import Memory, rank_activations, states, with_activations
from bench.advise.shape import Shape
from bench.advise.step import RECOMPUTED_GROUPS, Priced, Step, bubble, step_time
from bench.advise.timing import Timer
from bench.training.analytic import Precision
from bench.training.strategy import strategies


@dataclass(frozen=True)
class Job:
    """What every layout of one question shares."""

    shape: Shape
    batch: int  # samples per data-parallel replica
    precision: Precision
    compute: Compute
    timer: Timer
    memory_limit: float | None  # device.memory_bytes
    bytes: Bytes
    measured: Measured | None = None  # a concurrent run's slowdowns and overlap (--interference)
    # priced calls and model states per layout without its knobs (filled as layouts are priced)
    cache: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False,
                                                    repr=False)

    def fits(self, mem: Memory) -> bool:
        """Whether ``mem`` fits device.memory_bytes (always, where it is unstated)."""
        return self.memory_limit is None or mem.total <= self.memory_limit


@dataclass(frozen=True)
class Result:
    layout: Layout
    step: Step
    memory: Memory
    fits: bool
    samples_per_s: float
    efficiency: float  # weak scaling: (d * T1) / (world * step), T1 one rank alone
    limit: float | None = None  # the device memory it was held against


def _contexts(job: Job, lay: Layout) -> list[CommContext]:
    """One rank of each distinct kind of pipeline rank (:func:`representative_stages`)."""
    return [CommContext(job.shape, lay, job.batch, job.bytes, pp=pp)
            for pp in representative_stages(job.shape, lay)]


def _priced(job: Job, lay: Layout) -> list[list[Priced]]:
    """The priced calls of each representative stage."""
    out = []
    for ctx in _contexts(job, lay):
        priced = (strategies().get(lay.dp).price or timed)(job, ctx)
        if job.measured is not None:
            priced = job.measured.apply(priced)
        out.append(priced)
    return out


def timed(job: Job, ctx: CommContext, own: list[Call] | None = None) -> list[Priced]:
    """The layout's calls timed on their groups (``own``: the data strategy's, as it prices them)."""
    calls = [(c, job.timer.group(ctx.layout, c.group))
             for c in (layout_calls(ctx) if own is None else [*own, *axis_calls(ctx)])]
    job.timer.prime(calls)  # the sizes of each group's collective in one batch
    return [Priced(c, *job.timer.time(c, g)) for c, g in calls]


def _memo(job: Job, key: tuple[object, ...], make: Callable[[], Any]) -> Any:
    got = job.cache.get(key)
    if got is None:
        got = job.cache[key] = make()
    return got


def _cached(job: Job, kind: str, lay: Layout, make: Callable[[], Any]) -> Any:
    """``make()`` shared by the layout's knob variants."""
    plain = dataclasses.replace(lay, checkpoint=False, amp="fp32") \
        if lay.checkpoint or lay.amp != "fp32" else lay
    return _memo(job, (kind, plain), make)


def fixed_s(job: Job, lay: Layout) -> float:
    """The software's own time per micro-batch on each of the rank's stages
    (``device.microbatch_overhead_s``, :class:`bench.advise.software.Software`), for the step:
    micro-batches x stages per rank x the overhead."""
    return lay.microbatches * lay.stages_per_rank * job.shape.software.microbatch_overhead_s


def _knobs(job: Job, lay: Layout) -> float:
    """What autocast multiplies compute by (:func:`bench.advise.compute.factor`)."""
    return factor(job.compute, job.precision.act_scale(lay.amp) == 1)


def memory_of(job: Job, lay: Layout) -> Memory:
    """The layout's largest rank (its model states shared with its knob variants)."""
    held = _cached(job, "states", lay, lambda: states(job.shape, lay, job.batch, job.precision))
    return with_activations(held, rank_activations(job.shape, lay, job.batch, job.precision))


def floor(job: Job, lay: Layout, calls: bool = False) -> float:
    """A lower bound on the layout's step: its slowest rank's compute (with the knobs), bubble
    and optimizer step; with ``calls``, tighter and dearer, also its axes' calls the step
    exposes in full (:func:`_exposed`)."""
    knobs = _knobs(job, lay)
    out = 0.0
    stages = _cached(job, "compute", lay, lambda: _compute(job, lay))
    waits = _axes_exposed(job, lay) if calls else None
    for i, (compute, opt, again) in enumerate(stages):
        c = (compute + (again if lay.checkpoint else 0.0)) * knobs + fixed_s(job, lay)
        wait = 0.0
        if waits is not None:
            every, again = waits[i]
            wait = every + (again if lay.checkpoint else 0.0)
        out = max(out, c + bubble(c, lay.microbatches, lay.pipeline, lay.stages_per_rank)
                  + opt + wait)
    return out


def _axes_exposed(job: Job, lay: Layout) -> list[tuple[float, float]]:
    """:func:`_exposed`, shared by the layouts whose axes' calls and groups are alike; zeros
    where the step may price them otherwise (a strategy's own pricing, measured interference)."""
    if strategies().get(lay.dp).price is not None or job.measured is not None:
        return [(0.0, 0.0)] * len(representative_stages(job.shape, lay))
    key = ("exposed", lay.data, lay.tensor, lay.context, lay.pipeline, lay.stages_per_rank,
           lay.microbatches, lay.expert)
    return _memo(job, key, lambda: _exposed(job, lay))  # type: ignore[no-any-return]


def _exposed(job: Job, lay: Layout) -> list[tuple[float, float]]:
    """Per representative stage: the seconds of its axes' calls that no overlap hides, and of
    those full recomputation issues again, rounded down by a relative 1e-12 (the step sums
    the same times in another order)."""
    stages = [[(c, job.timer.group(lay, c.group)) for c in axis_calls(ctx) if not c.overlap]
              for ctx in _contexts(job, lay)]
    job.timer.prime([cg for calls in stages for cg in calls])  # each group's sizes at once
    out = []
    for calls in stages:
        every = again = 0.0
        for c, g in calls:
            t = job.timer.time(c, g).seconds * c.calls
            every += t
            if c.phase == "forward" and c.group in RECOMPUTED_GROUPS and c.rerun:
                again += t
        out.append((every * (1 - 1e-12), again * (1 - 1e-12)))
    return out


def _compute(job: Job, lay: Layout) -> list[tuple[float, float, float]]:
    """(compute before the knobs, optimizer, what full recomputation adds) of each
    representative stage."""
    return [(job.compute.seconds(ctx), job.compute.optimizer(ctx), job.compute.recomputed(ctx))
            for ctx in _contexts(job, lay)]


def evaluate(job: Job, lay: Layout, mem: Memory | None = None) -> Result:
    knobs = _knobs(job, lay)
    worst: Step | None = None
    priced_stages = _cached(job, "priced", lay, lambda: _priced(job, lay))
    computes = _cached(job, "compute", lay, lambda: _compute(job, lay))
    overlap = bool(job.timer.profile.device.get("overlaps_communication", True))
    for priced, (compute, opt, again) in zip(priced_stages, computes):
        compute = compute + (again if lay.checkpoint else 0.0)
        st = step_time(priced, compute * knobs + fixed_s(job, lay), lay.microbatches, lay.pipeline,
                       lay.stages_per_rank, overlap, opt, lay.checkpoint)
        if job.measured is not None and overlap:
            st = job.measured.overlapped(st, priced)
        if worst is None or st.time > worst.time:
            worst = st
    assert worst is not None
    if mem is None:
        mem = memory_of(job, lay)
    one = job.compute.seconds(CommContext(job.shape, Layout(), job.batch, job.bytes))
    sps = lay.data * job.batch / worst.time
    return Result(lay, worst, mem, job.fits(mem), sps, lay.data * one / (lay.world * worst.time),
                  job.memory_limit)
