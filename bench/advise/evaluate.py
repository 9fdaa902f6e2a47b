"""One layout priced: its calls timed on their groups, compute, memory, the step and what
follows from it (throughput, scaling efficiency). The step is the slowest rank's: every
pipeline index is priced (stages differ in compute and in their boundaries)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.advise.comm import Bytes, CommContext, layout_calls, representative_stages
from bench.advise.compute import Compute
from bench.advise.layout import Layout
from bench.advise.memory import Memory, layout_memory
from bench.advise.shape import Shape
from bench.advise.step import Priced, Step, step_time
from bench.advise.timing import Timer
from bench.training.analytic import Precision


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


@dataclass(frozen=True)
class Result:
    layout: Layout
    step: Step
    memory: Memory
    fits: bool
    samples_per_s: float
    efficiency: float  # weak scaling: (d * T1) / (world * step), T1 one rank alone
    limit: float | None = None  # the device memory it was held against


def evaluate(job: Job, lay: Layout, mem: Memory | None = None) -> Result:
    worst: Step | None = None
    for pp in representative_stages(job.shape, lay):
        ctx = CommContext(job.shape, lay, job.batch, job.bytes, pp=pp)
        priced = []
        for c in layout_calls(ctx):
            t = job.timer.time(c, job.timer.group(lay, c.group))
            priced.append(Priced(c, t.seconds, t.algorithm, t.best))
        st = step_time(priced, job.compute.seconds(ctx), lay.microbatches, lay.pipeline,
                       lay.stages_per_rank)
        if worst is None or st.time > worst.time:
            worst = st
    assert worst is not None
    mem = mem or layout_memory(job.shape, lay, job.batch, job.precision)
    fits = job.memory_limit is None or mem.total <= job.memory_limit
    one = job.compute.seconds(CommContext(job.shape, Layout(), job.batch, job.bytes))
    sps = lay.data * job.batch / worst.time
    return Result(lay, worst, mem, fits, sps, lay.data * one / (lay.world * worst.time),
                  job.memory_limit)
