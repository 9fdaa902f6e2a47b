"""Communication overlapped with compute, measured as OSU's non-blocking collectives measure it
(docs/concurrency.md, "Overlap, OSU's definition"): pure communication, a GEMM calibrated to its
time, and the overlapped iteration, timed by the harness in alternating turns, then the case
checked exactly on fresh input. Progress (``progress``): ``nonblocking``, the vendor's
``MPI_I...`` call progressed by the library; ``thread``, a progress thread runs the compiled case
while the main thread runs the GEMM (numpy's GEMM releases the GIL)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Collection
from typing import Any

import numpy as np
from mpi4py import MPI

from bench.concurrent import define
from bench.concurrent.groups import mpi_group
from bench.concurrent.scenario import ONE_BLAS_THREAD, ConcurrentScenario, OverlapSpec
from bench.measure import harness
from bench.measure.case import Timing
from bench.store import kinds
from kernels.topology import Topology
from kernels.transports.base import Plan

CALIBRATION = Timing(warmup=1, iters=5, repetitions=1)  # the GEMM's trial runs
GEMM_N = (8, 4096)  # the GEMM's side is kept within these
CALIBRATION_ROUNDS = 4  # GEMM sizings at most; stops within 10 % of the communication time
ASYNC_ENV = ("MPIR_CVAR_ASYNC_PROGRESS", "MPICH_ASYNC_PROGRESS", "OMPI_MCA_opal_progress_thread")


class Gemm:
    """C = A B on float32 n x n matrices made once (2 n^3 flops a run)."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(n)
        self.n = n
        self.a = rng.random((n, n), dtype=np.float32)
        self.b = rng.random((n, n), dtype=np.float32)
        self.c = np.empty((n, n), dtype=np.float32)

    def run(self) -> None:
        np.matmul(self.a, self.b, out=self.c)


class Nonblocking:
    """A vendor MPI plan's non-blocking form: ``start`` posts it, ``wait`` completes it."""

    def __init__(self, plan: Plan) -> None:
        run = getattr(plan, "run", None)
        method = getattr(run, "func", None)
        comm = getattr(method, "__self__", None)
        if not isinstance(run, functools.partial) or not isinstance(comm, MPI.Comm):
            raise ValueError("this vendor call has no non-blocking MPI form (not an MPI call)")
        name = method.__name__  # type: ignore[union-attr]
        self.call = "MPI_I" + name[0].lower() + name[1:]
        self._start = functools.partial(getattr(comm, "I" + name[0].lower() + name[1:]),
                                        *run.args, **run.keywords)
        self._req: MPI.Request | None = None

    def start(self) -> None:
        self._req = self._start()

    def wait(self) -> None:
        assert self._req is not None
        self._req.Wait()

    def close(self) -> None:
        pass


class Background:
    """A progress thread that runs ``plan`` once per ``start``; ``wait`` until it has."""

    def __init__(self, plan: Plan) -> None:
        self.plan, self.go, self.idle = plan, threading.Event(), threading.Event()
        self.error: BaseException | None = None
        self.closing = False
        self.idle.set()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            if self.closing:
                return
            try:
                self.plan.run()
            except BaseException as e:  # raised again by wait() on the main thread
                self.error = e
            self.idle.set()

    def start(self) -> None:
        self.idle.clear()
        self.go.set()

    def wait(self) -> None:
        self.idle.wait()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closing = True
        self.go.set()
        self.thread.join()


class Run:
    """A callable the harness times (its ``run``)."""

    def __init__(self, run: Callable[[], object]) -> None:
        self.run = run

    def close(self) -> None:
        pass


def _agreed_median(env: harness.Env, samples: list[float]) -> float:
    return float(env.control.bcast(float(np.median(samples)), root=0))


def calibrate(env: harness.Env, target_us: float) -> tuple[Gemm, list[tuple[int, float]]]:
    """The GEMM whose time (rank 0's median) came closest to ``target_us``, and every trial
    (side, µs): from side 64, each next side scaled by the cube root of the time ratio, within
    :data:`GEMM_N`, until one is within 10 % or :data:`CALIBRATION_ROUNDS` were tried."""
    n, trials = 64, []
    best: tuple[Gemm, float] | None = None
    for _ in range(CALIBRATION_ROUNDS):
        gemm = Gemm(n)
        t = _agreed_median(env, harness.time_plans(env, CALIBRATION, [gemm])[0])
        trials.append((n, t))
        if best is None or abs(t - target_us) < abs(best[1] - target_us):
            best = (gemm, t)
        if abs(t - target_us) <= 0.1 * target_us:
            break
        scaled = round(n * (target_us / max(t, 1e-3)) ** (1 / 3))
        nxt = int(min(GEMM_N[1], max(GEMM_N[0], scaled)))
        if nxt == n:
            break
        n = nxt
    assert best is not None
    return best[0], trials


def _progress_how(spec: OverlapSpec, comm: Any) -> str:
    if isinstance(comm, Nonblocking):
        on = [f"{k}={os.environ[k]}" for k in ASYNC_ENV if os.environ.get(k)]
        return (f"{comm.call} started before the GEMM, MPI_Wait after it; progressed by the MPI "
                + (f"library's progress thread ({', '.join(on)})" if on
                   else "library inside MPI calls only (no asynchronous progress set)"))
    return (f"a progress thread runs {spec.algorithm} (blocking MPI calls, MPI_THREAD_MULTIPLE) "
            "while the main thread runs the GEMM")


def measure(env: harness.Env, spec: OverlapSpec, nbytes: int, sc: ConcurrentScenario
            ) -> dict[str, Any] | None:
    """One overlap case on every rank of ``env``; its record on rank 0 (None elsewhere, or when
    the size rounds to no element)."""
    g = mpi_group(spec.collective, spec.algorithm, env.topology, nbytes, sc.dtype)
    if g is None:
        return None
    timing = sc.timing.for_size(g.nbytes)
    with harness.compiled(env, g) as b:
        plan = b.entries[0].plan
        assert plan is not None
        comm: Nonblocking | Background = (Nonblocking(plan) if spec.progress == "nonblocking"
                                          else Background(plan))
        try:
            pure = Run(lambda: (comm.start(), comm.wait()))
            first = _agreed_median(env, harness.time_plans(env, timing, [pure])[0])
            gemm, trials = calibrate(env, first)
            overall = Run(lambda: (comm.start(), gemm.run(), comm.wait()))
            samples = harness.time_plans(env, timing, [pure, gemm, overall])
        finally:
            comm.close()
    wrong = harness.check_group(env, g)[spec.algorithm] if sc.check else None
    means = [float(np.mean(s)) for s in samples]
    per_rank = env.control.gather(means, root=0)
    if per_rank is None:
        return None
    comm_us, compute_us, overall_us = (define.mean_over_ranks([r[i] for r in per_rank])
                                       for i in range(3))
    return kinds.overlap(
        status="wrong" if wrong else "ok", collective=g.collective, algorithm=spec.algorithm,
        progress=spec.progress, progress_how=_progress_how(spec, comm), world_size=g.world_size,
        nbytes=g.nbytes, count=g.count, dtype=sc.dtype,
        overall_us=overall_us, compute_us=compute_us, comm_us=comm_us, test_us=0.0,
        overlap_pct=define.overlap_pct(overall_us, compute_us, comm_us),
        overlap_pct_unclamped=define.overlap_unclamped(overall_us, compute_us, comm_us),
        comm_us_ranks=[r[0] for r in per_rank], compute_us_ranks=[r[1] for r in per_rank],
        overall_us_ranks=[r[2] for r in per_rank], iters=len(samples[0]),
        gemm="float32 n x n matmul (numpy)", gemm_n=gemm.n, gemm_trials=trials,
        comm_us_before_calibration=first, wrong=wrong,
        blas_threads={k: os.environ[k] for k in ONE_BLAS_THREAD if k in os.environ},
        statistic="OSU: each rank's mean over the timed iterations, averaged over ranks",
        timer=harness.TIMER.split(";")[0] + "; each rank's own samples")


def run_overlap(world: MPI.Comm, sc: ConcurrentScenario, topo: Topology,
                emit: Callable[[dict[str, Any]], None] | None, extra: dict[str, Any],
                arm: Callable[[str], None], disarm: Callable[[], None],
                done: Collection[tuple[Any, ...]] = ()) -> None:
    """Every overlap case at every size on every rank of ``world``, less those in ``done``."""
    from kernels.transports import TRANSPORTS

    env = harness.Env(world, TRANSPORTS.get("mpi").create(world), topo, {})
    try:
        for spec in sc.overlap:
            for nbytes in sc.sizes:
                if define.overlap_key(spec.model_dump(), nbytes) in done:
                    continue
                arm(f"overlap {spec.collective} {spec.algorithm} {spec.progress} at {nbytes} B")
                rec = measure(env, spec, nbytes, sc)
                disarm()
                if rec is not None and emit is not None:
                    emit({**rec, **extra, "requested_nbytes": nbytes})
    finally:
        env.transport.close()
