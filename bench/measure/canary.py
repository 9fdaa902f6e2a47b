"""Drift canary: a tiny fixed measurement at the start and end of every job (and between its world
sizes), appended by rank 0 to ``canary.jsonl``; a 256 KiB copy is measured too, only to price
local copies (:mod:`bench.costmodel.copybw`). :func:`changed_speed` is the one rule for "the
machine changed speed", within a run, between runs and within an ``ab`` round. docs/measuring.md,
"The drift canary"."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure.timer import Timer

CANARY = "canary.jsonl"
FACTOR = 1.25  # medians this factor apart or more (the VM's modes differ by ~3x)...
ALPHA = 0.01  # ...that the samples' spread cannot explain
MIN_SAMPLES = 3  # samples each side needs for the spread to be judged
ITERS = 40
WARMUP = 3
METRICS = {"allreduce_1KiB_us": ("us", "lower"), "allreduce_1MiB_us": ("us", "lower"),
           "memcpy_GBps": ("GB/s", "higher")}  # judged for drift; the 256 KiB copy only prices
COPIES = {"memcpy_GBps": (4 << 20, 1), "memcpy_256KiB_GBps": (64 << 10, 16)}  # float32s, per sample


def measure(comm: Any, when: str) -> dict[str, Any]:
    """One reading on every rank of ``comm`` (collective), timed by the harness's loop
    (:mod:`bench.measure.timer`); the record on rank 0, {} elsewhere."""
    from mpi4py import MPI

    from bench.measure.ranks import worst_over_ranks

    out: dict[str, Any] = {"when": when, "time_unix": time.time(), "world_size": comm.size}
    timer = Timer(before=comm.Barrier)
    for name, count in (("allreduce_1KiB_us", 256), ("allreduce_1MiB_us", 262144)):
        send, recv = np.ones(count, np.float32), np.zeros(count, np.float32)
        run = functools.partial(comm.Allreduce, send, recv, MPI.SUM)
        timer.warm([run], WARMUP)
        worst = worst_over_ranks(comm, timer.time(run, ITERS))
        out[name] = worst.round(3).tolist() if worst is not None else None
    for name, (count, reps) in COPIES.items():
        src, dst = np.ones(count, np.float32), np.empty(count, np.float32)
        np.copyto(dst, src)  # pages touched, caches warm
        us = np.asarray(Timer().time(functools.partial(_copies, dst, src, reps), 12))
        rates = 2 * reps * src.nbytes / (us * 1e3)  # GB/s of read + write traffic
        slowest = np.empty(len(rates)) if comm.rank == 0 else None
        comm.Reduce(rates, slowest, op=MPI.MIN, root=0)
        out[name] = slowest.round(3).tolist() if slowest is not None else None
    return out if comm.rank == 0 else {}


def _copies(dst: np.ndarray, src: np.ndarray, reps: int) -> None:
    for _ in range(reps):
        np.copyto(dst, src)


def append(run_dir: Path, reading: Mapping[str, Any]) -> None:
    with (run_dir / CANARY).open("a", encoding="utf-8") as f:
        f.write(json.dumps(reading) + "\n")


def read(run_dir: Path) -> list[dict[str, Any]]:
    """The readings of a run (a line cut short by a crash is skipped)."""
    path = run_dir / CANARY
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def changed_speed(a: Sequence[float], b: Sequence[float]) -> bool:
    """The machine changed speed between readings ``a`` and ``b`` (rule: module doc)."""
    if not len(a) or not len(b):
        return False
    ma, mb = float(np.median(a)), float(np.median(b))
    if min(ma, mb) <= 0 or max(ma, mb) < FACTOR * min(ma, mb):
        return False
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        return True
    from scipy.stats import mannwhitneyu  # 1-2 s to import: only once the medians are apart

    return bool(mannwhitneyu(a, b).pvalue < ALPHA)


def assess(readings: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per metric that moved during the run (first reading against each later one)."""
    rs = [r for r in readings if isinstance(r, Mapping)]
    lines = []
    for name, (unit, _) in METRICS.items():
        series = [(r.get("when", "?"), r.get(name)) for r in rs if r.get(name)]
        if len(series) < 2:
            continue
        first_when, first = series[0]
        for when, later in series[1:]:
            if changed_speed(first, later):
                lines.append(f"{name}: median {np.median(first):.3g} {unit} at {first_when}, "
                             f"{np.median(later):.3g} {unit} at {when}")
                break
    return lines


def disagree(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per metric on which two runs' canaries disagree (all their readings pooled)."""
    ra, rb = list(a), list(b)
    lines = []
    for name, (unit, _) in METRICS.items():
        xa = [x for r in ra for x in (r.get(name) or [])]
        xb = [x for r in rb for x in (r.get(name) or [])]
        if changed_speed(xa, xb):
            lines.append(f"{name}: median {np.median(xa):.3g} {unit} vs {np.median(xb):.3g} {unit}")
    return lines


WARNING = ("the machine changed speed during this run: compare within it, not against other runs")
