"""The harness: the one place that owns the clock. Per group (one size, several algorithms):
deterministic fill, warm-up (which sizes the iteration count), ``repetitions`` blocks in which the
algorithms take turns, then the exact check on fresh input (docs/measuring.md, "The protocol").
It never names a collective: the group's collective says where input and output lie."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mpi4py import MPI

from bench.launch.rankstate import Where
from bench.measure import attribution, data, devicestats, metrics
from bench.measure.case import Group, Timing
from bench.measure.ranks import worst_over_ranks
from bench.measure.stats import summarize
from bench.measure.timer import Timer
from bench.store import kinds
from kernels.algorithm import VENDOR, Problem, get_algorithm
from kernels.bytecount import bytes_sent
from kernels.collective import Collective, Layout, resolve
from kernels.ops import HOST_DTYPE, ITEMSIZE, OPS
from kernels.topology import Topology
from kernels.transports.base import Plan, Transport, views
from kernels.transports.hostmem import hugepage_bytes

TIMER = "time.perf_counter_ns around each iteration, after a barrier; max over ranks per iteration"
# each rank's wait in that barrier, on its own clock: who arrived last (bench.measure.attribution)


def idle_barrier(comm: MPI.Comm, poll_s: float = 2e-3) -> None:
    """Wait for every rank of ``comm`` asleep between tests of a non-blocking barrier (``poll_s``
    apart), leaving the cores to the ranks still measuring: an MPI wait may poll a core flat
    out, and on a host whose cores are shared that would slow the ranks measured."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll_s)


def osu_statistic(comm: MPI.Comm, samples: Sequence[float]) -> dict[str, float] | None:
    """OSU's latency from the same iterations: each rank's mean over its timed iterations, then
    the average, min and max over ranks (``osu_allreduce``'s Avg/Min/Max columns); on rank 0."""
    means = comm.gather(float(np.mean(samples)) if len(samples) else float("nan"), root=0)
    if means is None:
        return None
    return {"time_us_osu_avg": float(np.mean(means)), "time_us_osu_min": float(np.min(means)),
            "time_us_osu_max": float(np.max(means))}


@dataclass(frozen=True)
class Env:
    """What the harness needs from the launch: control plane, transport, topology."""

    control: MPI.Comm  # host-side aggregation of samples and counts (never timed)
    transport: Transport
    topology: Topology
    extra: dict[str, Any]  # fields stamped on every record (run id, scenario, oversubscribed)
    where: Where | None = None  # kept current for the watchdog (the plan running, its step)

    def enter(self, e: _Entry) -> None:
        """``e``'s plan runs next (for the watchdog's account of a hang)."""
        if self.where is not None:
            self.where.enter(e.plan, e.name, world_ranks(self.control))

    def leave(self) -> None:
        if self.where is not None:
            self.where.leave()


def world_ranks(comm: MPI.Comm) -> tuple[int, ...]:
    """``comm``'s ranks as ranks of ``MPI_COMM_WORLD``."""
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return tuple(MPI.Group.Translate_ranks(group, list(range(comm.size)), world))
    finally:
        group.Free()
        world.Free()


SENTINEL = -12345  # fills the output region before the check; no expected value is ever this


@dataclass
class _Entry:
    name: str
    layout: Layout
    in_place: bool  # schedules run in place; native on separate send/receive buffers
    plan: Plan | None = None
    steps: int | None = None
    bytes_sent: int | None = None
    bytes_inter: int | None = None
    samples: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)  # this rank's wait in each barrier (µs)
    device_samples: list[float] | None = None  # CUDA-event times, device transports only


def _entry(env: Env, group: Group, spec: Collective, name: str) -> _Entry:
    separate = not get_algorithm(spec.name, group.base(name)).in_place or spec.inplace_at is None
    layout = spec.layout(group.count, group.world_size, env.transport.rank, group.root,
                         separate=separate)
    return _Entry(name, layout, not separate)


def _compile(env: Env, group: Group, spec: Collective, e: _Entry, buf: Any, scratch: Any) -> None:
    alg, op = get_algorithm(spec.name, group.base(e.name)), OPS[group.op] if spec.reduces else None
    if alg.is_vendor:  # native_inplace: the same transport code, bound to the in-place calls
        calls = spec if alg.name == VENDOR else dataclasses.replace(spec, vendor=spec.vendor_inplace)
        e.plan = env.transport.vendor(calls, buf, e.layout, op, group.root)
        return
    item = ITEMSIZE[group.dtype]
    problem = Problem(env.topology, group.count, item, group.collective, group.root)
    sched = alg.schedule(problem, env.transport.rank)
    sent = bytes_sent(sched, env.topology, item)
    e.plan = env.transport.compile(sched, buf, scratch, op or OPS["sum"])
    e.steps, e.bytes_sent, e.bytes_inter = len(sched.steps), sent.total, sent.inter


def _prepare(tr: Transport, buf: Any, layout: Layout, group: Group) -> None:
    """Sentinel over this layout's output region, then this rank's input, both made and uploaded
    ``data.BLOCK`` elements at a time: no host copy of the message is ever held (a 1 GiB case
    needs the workspace and scratch, not a third buffer)."""
    host_dtype = HOST_DTYPE[group.dtype]
    if layout.out is not None:
        for a in range(layout.out.start, layout.out.stop, data.BLOCK):
            b = min(layout.out.stop, a + data.BLOCK)
            tr.upload(buf[a:b], np.full(b - a, SENTINEL, dtype=host_dtype))
    if layout.inp is not None:
        rank, start = tr.rank, layout.inp.start
        for a in range(0, layout.inp.size, data.BLOCK):
            b = min(layout.inp.size, a + data.BLOCK)
            values = data.fill(rank, group.world_size, b - a, group.op, a).astype(host_dtype)
            tr.upload(buf[start + a:start + b], values)


def _iterations(env: Env, timing: Timing, warm: Sequence[Sequence[float]]) -> int:
    """Iterations per algorithm: the explicit override, or the time budget over the slowest
    warm-up iteration of any algorithm on any rank (so all ranks agree)."""
    if timing.iters is not None:
        return timing.iters
    slowest = env.control.allreduce(max(float(np.median(w)) for w in warm), op=MPI.MAX)
    iters = int(timing.time_budget_ms * 1e3 / max(slowest, 1e-3))
    return max(timing.min_iters, min(timing.max_iters, iters))


def time_plans(env: Env, timing: Timing, plans: Sequence[Plan],
               device: list[list[float]] | None = None,
               waits: list[list[float]] | None = None,
               on_turn: Any = None) -> list[list[float]]:
    """This rank's samples (us) per plan: warm-up, then ``repetitions`` blocks in which the plans
    take turns; ``device``, ``waits`` and ``on_turn`` as :meth:`Timer.turns` takes them."""
    tr = env.transport
    timer = Timer(tr.barrier, tr.synchronize)
    runs = [p.run for p in plans]
    events = devicestats.clock_of(tr) if device is not None else None
    with np.errstate(all="ignore"):  # repeated in-place reductions overflow: harmless
        iters = _iterations(env, timing, timer.warm(runs, max(1, timing.warmup)))
        return timer.turns(runs, iters, timing.repetitions, events, device, waits, on_turn)


@dataclass
class _Bound:
    """A group's algorithms compiled on one workspace (and scratch)."""

    spec: Collective
    entries: list[_Entry]
    buf: Any


@contextlib.contextmanager
def compiled(env: Env, group: Group) -> Iterator[_Bound]:
    """``group``'s algorithms compiled on one workspace, closed on exit: for a caller that runs
    them untimed (the background load of :mod:`bench.concurrent`) or times them here
    (:func:`time_plans`)."""
    tr = env.transport
    spec = resolve(group.collective)
    entries = [_entry(env, group, spec, a) for a in group.algorithms]
    scheduled = [e for e in entries if not get_algorithm(spec.name, group.base(e.name)).is_vendor]
    buf = tr.allocate(max(e.layout.space for e in entries), group.dtype)
    # Reducing receives land in scratch at the same offsets: a schedule-sized buffer, only when
    # some schedule reduces.
    scratch = (tr.allocate(max(e.layout.space for e in scheduled), group.dtype)
               if spec.reduces and scheduled else None)
    try:
        for e in entries:
            _compile(env, group, spec, e, buf, scratch)
        yield _Bound(spec, entries, buf)
    finally:
        for e in entries:
            if e.plan is not None:
                e.plan.close()


def measure(env: Env, group: Group, timing: Timing, check: bool) -> list[dict[str, Any]]:
    """Measure every algorithm of ``group``; records on rank 0, ``[]`` on other ranks."""
    tr = env.transport
    timing = timing.for_size(group.nbytes)
    mem_before = devicestats.memory_of(tr)  # None on host transports
    with compiled(env, group) as b:
        mem_compiled = devicestats.memory_of(tr)
        pages = hugepage_bytes(b.buf) if isinstance(b.buf, np.ndarray) else None
        _prepare(tr, b.buf, b.entries[0].layout, group)
        device = [[] for _ in b.entries] if devicestats.has_clock(tr) else None
        plans = [e.plan for e in b.entries if e.plan is not None]
        waits = [e.waits for e in b.entries]
        timed = time_plans(env, timing, plans, device, waits, lambda i: env.enter(b.entries[i]))
        env.leave()
        for i, (e, samples) in enumerate(zip(b.entries, timed)):
            e.samples = samples
            e.device_samples = device[i] if device else None
        mem_after = devicestats.memory_of(tr)
        memory = (devicestats.memory_fields(mem_before, mem_compiled, mem_after)
                  if mem_before and mem_compiled and mem_after else None)
        with np.errstate(all="ignore"):
            wrong = [_check(env, group, b.spec, e, b.buf) if check else None
                     for e in b.entries]
        recs = _records(env, group, b.spec, timing, b.entries, wrong, memory)
        for rec in recs:  # what the kernel gave rank 0's workspace (host transports)
            rec["hugepage_bytes"] = pages
        return recs


def check_group(env: Env, group: Group) -> dict[str, int]:
    """Correctness only, no clock: each algorithm of ``group`` once on fresh input; its wrong
    elements summed over ranks (the same preparation and check as :func:`measure`)."""
    with compiled(env, group) as b, np.errstate(all="ignore"):
        wrong = [_check(env, group, b.spec, e, b.buf) for e in b.entries]
    total = env.control.allreduce(np.array(wrong, dtype=np.int64), op=MPI.SUM)
    return {e.name: int(w) for e, w in zip(b.entries, total)}


def _check(env: Env, group: Group, spec: Collective, e: _Entry, buf: Any) -> int:
    tr = env.transport
    assert e.plan is not None
    _prepare(tr, buf, e.layout, group)
    tr.barrier()  # every rank's input is in place before anyone reads a peer's (device IPC)
    env.enter(e)
    e.plan.run()
    tr.synchronize()
    env.leave()
    _, out = views(buf, e.layout)
    host_out = tr.download(out) if out is not None else None
    return data.count_wrong_output(host_out, spec, group.count, group.world_size, tr.rank,
                                   group.root, group.op, group.dtype)


def _records(env: Env, group: Group, spec: Collective, timing: Timing, entries: list[_Entry],
             wrong: list[int | None], memory: dict[str, int] | None = None) -> list[dict[str, Any]]:
    ctl = env.control
    out = []
    for e, w in zip(entries, wrong):
        worst = worst_over_ranks(ctl, e.samples)
        who = attribution.gather(ctl, e.samples, e.waits)
        osu = osu_statistic(ctl, e.samples)
        total_wrong = ctl.reduce(w, op=MPI.SUM, root=0) if w is not None else None
        sent = ctl.reduce(e.bytes_sent, op=MPI.MAX, root=0) if e.bytes_sent is not None else None
        inter = ctl.reduce(e.bytes_inter, op=MPI.MAX, root=0) if e.bytes_inter is not None else None
        device = devicestats.record_fields(ctl, e.device_samples, memory)
        if ctl.rank != 0:
            continue
        assert worst is not None and osu is not None and who is not None
        s = summarize(worst)
        t = (osu["time_us_osu_avg"] if timing.style == "osu" else s.median) / 1e6
        out.append(kinds.collective(
            status="wrong" if total_wrong else "ok",
            collective=spec.key, algorithm=e.name, transport=group.transport,
            world_size=group.world_size, ranks_per_node=group.ranks_per_node,
            nodes=group.world_size // group.ranks_per_node,
            nbytes=group.nbytes, count=group.count, dtype=group.dtype, op=group.op,
            root=group.root if spec.rooted else None,
            in_place=e.in_place,
            iters=s.n, warmup=timing.warmup, repetitions=timing.repetitions,
            **s.as_dict("time_us_"), **osu, timing_style=timing.style,
            algbw_gbps=metrics.algbw_gbps(group.nbytes, t),
            busbw_gbps=metrics.busbw_gbps(spec.name, group.world_size, group.nbytes, t),
            wrong=total_wrong,
            tolerance=data.tolerance(group.world_size, group.dtype) if group.op == "sum" else 0.0,
            bytes_sent_max=sent, bytes_sent_inter_max=inter, steps=e.steps,
            timer=TIMER + (devicestats.TIMER_DEVICE if e.device_samples is not None else ""),
            samples_us=[round(x, 3) for x in worst.tolist()],
            **who,
            time_unix=time.time(),
            **device,
            **env.extra,
        ))
    return out
