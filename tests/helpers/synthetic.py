"""Synthetic run directories with the record schema of the harness, for tests and benchmarks.

Times follow an α-β model (latency per step plus bytes over a bandwidth) with seeded log-normal
noise, so figures have shape and every number is reproducible. Nothing here is a measurement:
records say ``"scenario": "synthetic"`` unless told otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure import metrics
from bench.store import kinds
from bench.store.records import RESULTS, write_meta

ALGORITHMS = {"native": (8.0, 6.0), "ring": (14.0, 5.5), "tree": (10.0, 3.5),
              "naive": (9.0, 2.0)}  # name: (latency µs per step, GB/s)


@dataclass(frozen=True)
class Spec:
    world_sizes: Sequence[int] = (1, 2, 4)
    sizes: Sequence[int] = tuple(8 * 4**i for i in range(10))
    algorithms: Sequence[str] = tuple(ALGORITHMS)
    transports: Sequence[str] = ("mpi",)
    dtypes: Sequence[str] = ("float32",)
    ops: Sequence[str] = ("sum",)
    samples: int = 40
    repeats: int = 1  # records per key (a results file appended to several times)
    scenario: str = "synthetic"
    seed: int = 0


def _time_us(alg: str, world: int, nbytes: int) -> float:
    lat, bw = ALGORITHMS.get(alg, (12.0, 4.0))
    steps = 2 * math.ceil(math.log2(world)) if world > 1 else 0
    return 0.3 + lat * steps + (2 * (world - 1) / world) * nbytes / (bw * 1e3)


def collective_records(spec: Spec) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(spec.seed)
    for _ in range(spec.repeats):
        for transport in spec.transports:
            for dtype in spec.dtypes:
                for op in spec.ops:
                    for w in spec.world_sizes:
                        for n in spec.sizes:
                            for alg in spec.algorithms:
                                yield _record(rng, spec, alg, transport, dtype, op, w, n)


def _record(rng: np.random.Generator, spec: Spec, alg: str, transport: str, dtype: str, op: str,
            world: int, nbytes: int) -> dict[str, Any]:
    t = _time_us(alg, world, nbytes)
    samples = t * rng.lognormal(0.0, 0.05, spec.samples)
    med = float(np.median(samples))
    p5, p95 = np.percentile(samples, [5, 95])
    count = nbytes // 4
    return kinds.collective(
        status="ok", collective="all_reduce", algorithm=alg, transport=transport,
        world_size=world, ranks_per_node=world, nodes=1, nbytes=nbytes, count=count, dtype=dtype,
        op=op, iters=spec.samples, warmup=3, repetitions=2,
        time_us_min=float(samples.min()), time_us_median=med,
        time_us_mean=float(samples.mean()), time_us_p5=float(p5), time_us_p95=float(p95),
        time_us_max=float(samples.max()), time_us_stdev=float(samples.std(ddof=1)),
        algbw_gbps=metrics.algbw_gbps(nbytes, med / 1e6),
        busbw_gbps=metrics.busbw_gbps("all_reduce", world, nbytes, med / 1e6),
        wrong=0, tolerance=0.0,
        bytes_sent_max=None if alg == "native" else int(2 * (world - 1) / world * nbytes),
        bytes_sent_inter_max=0, steps=None if alg == "native" else 2 * (world - 1),
        timer="synthetic: log-normal samples around an alpha-beta model",
        samples_us=[round(float(x), 3) for x in samples], time_unix=1.7e9,
        run_id="synthetic", scenario=spec.scenario, oversubscribed=False,
    )


def failed_record(alg: str, world: int, nbytes: int, error: str) -> dict[str, Any]:
    """A case that did not finish: no timings, an error message (as a crashed case leaves)."""
    return kinds.collective(status="failed", collective="all_reduce", algorithm=alg,
                            transport="mpi", world_size=world, ranks_per_node=world,
                            nbytes=nbytes, count=nbytes // 4, dtype="float32", op="sum",
                            error=error, run_id="synthetic", scenario="synthetic")


def training_records(strategies: Sequence[str] = ("data", "zero1", "tensor", "pipeline"),
                     models: Sequence[str] = ("mlp", "gpt-tiny"),
                     world_sizes: Sequence[int] = (1, 2, 4), seed: int = 0
                     ) -> Iterator[dict[str, Any]]:
    """Training records with the fields of issue 4 (memory split, step times, loss check)."""
    rng = np.random.default_rng(seed)
    for model, params in zip(models, (2.0e6, 8.0e6)):
        for s in strategies:
            for w in world_sizes:
                shard = {"data": 1, "zero1": 1, "tensor": w, "pipeline": w}[s]
                optim_shard = w if s == "zero1" else shard
                p = 4 * params / shard
                step = 20.0 * (1 + 0.1 * w) * rng.lognormal(0, 0.03)
                samples = step * rng.lognormal(0, 0.04, 20)
                yield kinds.training(
                    status="ok", strategy=s, model=model, world_size=w, ranks_per_node=w,
                    transport="mpi", step_time_ms_median=float(np.median(samples)),
                    step_time_ms_p5=float(np.percentile(samples, 5)),
                    step_time_ms_p95=float(np.percentile(samples, 95)),
                    samples_per_s=8 * w / (float(np.median(samples)) / 1e3),
                    scaling_efficiency=1 / (1 + 0.1 * (w - 1)),
                    mem_params_bytes=p, mem_grads_bytes=p,
                    mem_optim_bytes=8 * params / optim_shard,
                    mem_peak_bytes=3.6 * p + 8 * params / optim_shard,
                    comm_bytes_per_step=2 * p * (w - 1) / max(w, 1),
                    loss_max_abs_diff=1e-7, samples_ms=[float(x) for x in samples],
                    run_id="synthetic", scenario="synthetic")


def meta(run_id: str, scenario: str = "synthetic", **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "finished": dt.datetime(2026, 1, 1, 0, 1, tzinfo=dt.timezone.utc).isoformat(),
        "status": "ok", "host": {"hostname": "synthetic", "cpu": "none", "cores_logical": 2,
                                 "cores_physical": 2, "memory_bytes": 2**34, "gpus": []},
        "mpi": {"library": "none"}, "packages": {}, "commit": None, **extra}
    return kinds.meta(run_id=run_id, source="synthetic",
                      scenario={"name": scenario, "description": "synthetic records for tests"},
                      started=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).isoformat(),
                      **fields)


def write_run(run_dir: Path, records: Iterator[Mapping[str, Any]] | Sequence[Mapping[str, Any]],
              meta_fields: Mapping[str, Any] | None = None) -> Path:
    """Write ``meta.json`` and ``results.jsonl`` as the harness does (same JSON Lines format as
    :class:`bench.store.records.ResultWriter`, without its per-record fsync: 100,000 records in seconds)."""
    write_meta(run_dir, dict(meta_fields or meta(run_dir.name)))
    with (run_dir / RESULTS).open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n")
    return run_dir
