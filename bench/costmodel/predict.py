"""Predictions as records: the cost model's time for every (collective, algorithm, world size,
size, dtype), written like a measured run so ``report``, ``export`` and ``compare`` read it.
Which method prices each case (closed form, evaluator, vendor curve or model) and the
``vendor_choice`` field: docs/predict.md, "Per case, predict"."""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.costmodel.evaluate import evaluate, evaluate_batch, schedule_job
from bench.costmodel.model import Placed
from bench.costmodel.net import Net
from bench.costmodel.profile import Profile
from bench.costmodel.vendor.choose import choose
from bench.measure import metrics
from bench.store import kinds
from kernels import collective as coll
from kernels.algorithm import VENDOR, Algorithm, Problem, algorithms_of
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled
from kernels.ops import ITEMSIZE

__all__ = ["Estimate", "Prediction", "estimate_case", "native_ratio", "predict", "record"]
MAX_SCHEDULE_RANKS = 256
# A closed form that generates its schedule (per-rank arrays: the pipelined trees, Bruck,
# send/recv) costs time and memory in p x steps; beyond this it is skipped with the reason.
MAX_GENERATED_RANKS = 32768


@dataclass(frozen=True)
class Job:
    """A compiled schedule to evaluate (the sizes that share one in a single batch)."""

    comp: Compiled
    atoms: np.ndarray | None = None
    method: str = "generated"
    count: int | None = None  # the count to evaluate with (default: the problem's)

    def run(self, problem: Problem, net: Net) -> Estimate:
        return evaluate(self.comp, net, self.count or problem.count, problem.itemsize, self.atoms,
                        self.method)


@dataclass(frozen=True)
class Prediction:
    collective: str
    algorithm: str
    world: int
    nbytes: int
    count: int
    dtype: str
    estimate: Estimate | None
    why: str = ""  # why skipped (estimate None)
    choice: dict[str, str] | None = None  # native: what priced it (vendor_choice)


def plan_case(alg: Algorithm, problem: Problem, net: Net,
              max_schedule_ranks: int = MAX_SCHEDULE_RANKS) -> Estimate | Job | str:
    """The closed form (or the schedule it generates), else the schedule compiled, else why not."""
    why = "no closed form"
    if alg.closed is not None and net.hot:
        why = "closed forms price no hot sends (the profile's hot_send_s_per_byte)"
    elif alg.closed is not None and net.mpi is not None:
        why = "closed forms price no MPI protocol switch (the profile's mpi)"
    elif alg.closed is not None:
        got = alg.closed(Ctx(problem, net, MAX_GENERATED_RANKS))
        if isinstance(got, Compiled):
            return Job(got)
        if not isinstance(got, str):
            return got
        why = f"closed form does not apply ({got})"
    if problem.world > max_schedule_ranks:
        return f"{why}; schedules are evaluated up to p = {max_schedule_ranks} (--max-schedule-ranks)"
    try:
        comp, atoms, count = schedule_job(alg, problem, bool(net.hot))
    except ValueError as e:  # the algorithm refuses this topology (e.g. uneven nodes)
        return str(e).splitlines()[0]
    return Job(comp, atoms, "schedule", count)


def estimate_case(alg: Algorithm, problem: Problem, net: Net,
                  max_schedule_ranks: int = MAX_SCHEDULE_RANKS) -> Estimate | str:
    got = plan_case(alg, problem, net, max_schedule_ranks)
    return got.run(problem, net) if isinstance(got, Job) else got


def estimate_sizes(alg: Algorithm, problems: Sequence[Problem], net: Net,
                   max_schedule_ranks: int = MAX_SCHEDULE_RANKS) -> list[Estimate | str]:
    """:func:`estimate_case` for several sizes, the schedules they share evaluated in one batch."""
    plans = [plan_case(alg, pr, net, max_schedule_ranks) for pr in problems]
    out: list[Estimate | str] = [g if not isinstance(g, Job) else "" for g in plans]
    batches: dict[tuple[int, int], list[tuple[int, Job]]] = {}
    for i, g in enumerate(plans):
        if isinstance(g, Job):
            if g.atoms is None:
                batches.setdefault((id(g.comp), problems[i].itemsize), []).append((i, g))
            else:
                out[i] = g.run(problems[i], net)
    for jobs in batches.values():
        i0, job = jobs[0]
        got = evaluate_batch(job.comp, net, [g.count or problems[i].count for i, g in jobs],
                             problems[i0].itemsize, method=job.method)
        for (i, _), e in zip(jobs, got):
            out[i] = e
    return out


def native_ratio(profile: Profile, collective: str, name: str, nbytes: int,
                 world: int | None = None, statistic: str = "median") -> float | None:
    """Measured vendor time over the best modelled schedule's at this size (log-interpolated,
    flat outside the measured range; the curve of the world size nearest ``world``), or None.
    ``statistic``: ``median`` (a call's typical time) or ``mean`` (for sums of calls)."""
    curve = (profile.native.get(collective) or {}).get(name)
    by_world = (curve or {}).get("by_world_size") or {}
    if world is not None and by_world:
        near = min(by_world, key=lambda w: (abs(math.log(int(w) / world)), -int(w)))
        curve = by_world[near]
    key = "mean_points" if statistic == "mean" and (curve or {}).get("mean_points") else "points"
    pts = sorted((float(a), float(b)) for a, b in (curve or {}).get(key, []))
    if not pts:
        return None
    x = math.log(nbytes)
    xs = [math.log(a) for a, _ in pts]
    if x <= xs[0]:
        return pts[0][1]
    if x >= xs[-1]:
        return pts[-1][1]
    i = bisect.bisect_left(xs, x)  # xs[i - 1] < x <= xs[i]
    (x0, (_, y0)), (x1, (_, y1)) = (xs[i - 1], pts[i - 1]), (xs[i], pts[i])
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def predict(profile: Profile, placed: Placed, collective: str, sizes: Sequence[int],
            dtype: str, algorithms: Sequence[str] | None = None,
            max_schedule_ranks: int = MAX_SCHEDULE_RANKS) -> Iterator[Prediction]:
    """Predictions for one collective at one world size, per size then algorithm."""
    spec, p = coll.resolve(collective), placed.world
    net = Net(placed, profile)
    algs = [a for a in algorithms_of(spec.name) if algorithms is None or a.name in algorithms]
    problems, seen = [], set()
    for nbytes in sizes:
        count = spec.round_count(nbytes // ITEMSIZE[dtype], p)
        if count >= 1 and count not in seen:
            seen.add(count)
            problems.append(Problem(placed.topology, count, ITEMSIZE[dtype], spec.key, 0))
    # a measured vendor curve scales the best schedule: price every schedule only then
    vendor = any(a.is_vendor for a in algs) and bool(profile.native.get(spec.name))
    got = {a.name: estimate_sizes(a, problems, net, max_schedule_ranks)
           for a in algorithms_of(spec.name) if not a.is_vendor and (vendor or a in algs)}
    for i, problem in enumerate(problems):
        here = {name: res[i] for name, res in got.items()}
        real = problem.nbytes
        for a in algs:
            choice = None
            if a.is_vendor:
                e, choice = _native(profile, placed, a.name, real, here, problem)
            else:
                e = here[a.name]
            yield Prediction(spec.key, a.name, p, real, problem.count, dtype,
                             e if isinstance(e, Estimate) else None,
                             "" if isinstance(e, Estimate) else e, choice)


def _native(profile: Profile, placed: Placed, name: str, nbytes: int,
            got: dict[str, Estimate | str],
            problem: Problem) -> tuple[Estimate | str, dict[str, str] | None]:
    """The vendor call from its measured curve, else the vendor model; and what priced it."""
    collective = problem.spec.name
    ratio = native_ratio(profile, collective, name, nbytes, problem.world)
    if ratio is None and profile.fabric is not None:
        c = choose(placed, profile.fabric, collective, nbytes)
        if isinstance(c, str):
            return c, None
        return (Estimate(c.time_s, None, None, None, f"nccl model ({c.label})"),
                {"from": "nccl model", "algorithm": c.algorithm, "protocol": c.protocol})
    if ratio is None:
        return ("vendor call: the profile has no measured curve for it and no fabric to model "
                "it on (calibrate on runs that measured it)"), None
    ok = [e for e in got.values() if isinstance(e, Estimate)]
    if not ok:
        return ("vendor call: no schedule of the collective could be modelled here to scale its "
                "curve"), None
    best = min(ok, key=lambda e: e.time_s)
    return (Estimate(best.time_s * ratio, None, None, None,
                     f"{name} curve ({ratio:.3g} x the best modelled schedule)"),
            {"from": "measured curve"})


def record(pred: Prediction, placed: Placed, profile: Profile, transport: str,
           extra: dict[str, Any]) -> dict[str, Any]:
    """A collective record in the harness's schema, marked ``predicted``."""
    assert pred.estimate is not None
    spec, est = coll.resolve(pred.collective), pred.estimate
    t_us = est.time_s * 1e6
    rpn = placed.node_sizes[0] if placed.equal_nodes else None
    return kinds.collective(
        status="ok",
        collective=spec.key, algorithm=pred.algorithm, transport=transport,
        world_size=pred.world, ranks_per_node=rpn, nodes=placed.num_nodes,
        nbytes=pred.nbytes, count=pred.count, dtype=pred.dtype,
        op="sum" if spec.reduces else "none", root=0 if spec.rooted else None,
        in_place=pred.algorithm != VENDOR, iters=None, warmup=None, repetitions=None,
        time_us_min=t_us, time_us_median=t_us, time_us_mean=t_us, time_us_p5=t_us,
        time_us_p95=t_us, time_us_max=t_us, time_us_stdev=0.0,
        algbw_gbps=metrics.algbw_gbps(pred.nbytes, est.time_s),
        busbw_gbps=metrics.busbw_gbps(spec.name, pred.world, pred.nbytes, est.time_s),
        wrong=None, tolerance=None, bytes_sent_max=est.bytes_sent_max,
        bytes_sent_inter_max=est.bytes_inter_max, steps=est.steps,
        timer=f"predicted by the cost model ({est.method}), profile {profile.name}",
        samples_us=[t_us], samples_are_summaries=True, time_unix=time.time(),
        oversubscribed=False, predicted=True, profile=profile.provenance(),
        prediction={"method": est.method, "topology": placed.cluster.spec,
                    "placement": placed.cluster.placement, "job": placed.describe()},
        **({"vendor_choice": pred.choice} if pred.choice else {}),
        **extra,
    )

