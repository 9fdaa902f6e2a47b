"""Probe records (``kind: "probe"``, fields: docs/probe.md, "Output"), one per pair and size, and
what a probe measures. No MPI here: the launcher, the scenario and the reports import it."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.measure.stats import summarize
from bench.probe.links import Layout
from bench.store import kinds

# The measurements of a record: name -> (field prefix, what one sample is)
MEASUREMENTS = {"latency": "latency_us", "uni": "uni_us", "bi": "bi_us"}
SIGMA_PER_MAD = 1.4826  # normal sigma per median absolute deviation
MEDIAN_SE = 1.2533 * SIGMA_PER_MAD  # sqrt(pi/2) x (sigma per MAD) for normal samples
TIMER = ("time.perf_counter_ns on both ranks of a pair around each iteration, after the pair's "
         "barrier, max of the two per iteration; latency: half a ping-pong round trip; uni: a "
         "window of messages one way plus a 4-byte ack (osu_bw); bi: a window each way at once "
         "(osu_bibw)")


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...]
    repeats: int = 10  # timed samples per measurement, pair and size
    window: int = 16  # messages per bandwidth sample (osu_bw uses 64)
    warmup: int = 1  # untimed turns before the samples


@dataclass(frozen=True)
class Samples:
    """One pair at one size (µs per sample, the max of its two ranks per iteration)."""

    nbytes: int
    latency_us: tuple[float, ...]  # half round trips
    uni_us: tuple[float, ...]  # window times, one way
    bi_us: tuple[float, ...]  # window times, both ways


def median_noise(samples: Sequence[float]) -> float:
    """Standard error of the median of ``samples`` from their MAD (robust to a few stalls)."""
    x = np.asarray(samples, dtype=float)
    return MEDIAN_SE * mad(x) / math.sqrt(x.size)


def mad(values: Sequence[float]) -> float:
    """The median absolute deviation from the median."""
    v = np.asarray(values, dtype=float)
    return float(np.median(np.abs(v - np.median(v))))


def _stats(prefix: str, samples: Sequence[float]) -> dict[str, float]:
    x = np.asarray(samples, dtype=float)
    st = summarize(x).as_dict(prefix + "_")  # the statistics of every record kind
    return {**{f"{prefix}_{k}": st[f"{prefix}_{k}"] for k in ("median", "p5", "p95", "min")},
            f"{prefix}_noise": median_noise(x),
            prefix.removesuffix("_us") + "_samples_us": [round(v, 3) for v in x.tolist()]}


def gbps(nbytes: float, us: float) -> float:
    return nbytes / (us * 1e3) if us > 0 else float("nan")


def ranks_per_node(layout: Layout) -> int | None:
    sizes = {len(ranks) for ranks in layout.nodes()}
    return sizes.pop() if len(sizes) == 1 else None


def pair_record(layout: Layout, a: int, b: int, flows: int, rnd: int | None, s: Samples,
                settings: Settings, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The record of pair (a, b) at one size."""
    rec = kinds.probe(
        src=a, dst=b, world_size=layout.world, nbytes=s.nbytes,
        src_host=layout.hosts[a], dst_host=layout.hosts[b],
        src_node=layout.node_of[a], dst_node=layout.node_of[b],
        link_class=layout.link_class(a, b), flows=flows, round=rnd,
        ranks_per_node=ranks_per_node(layout), nodes=layout.num_nodes,
        repeats=settings.repeats, window=settings.window, warmup=settings.warmup)
    for prefix in MEASUREMENTS.values():
        rec.update(_stats(prefix, getattr(s, prefix)))
    w = settings.window * s.nbytes
    rec["uni_gbps"] = gbps(w, rec["uni_us_median"])
    rec["bi_gbps"] = gbps(2 * w, rec["bi_us_median"])
    rec.update(timer=TIMER, time_unix=time.time(), **extra)
    return rec


def block_record(layout: Layout, a: int, b: int, blocks: Sequence[Samples], settings: Settings,
                 extra: Mapping[str, Any]) -> dict[str, Any]:
    """The record of pair (a, b) at one size measured alone in blocks (the confirmation pass,
    ``flows`` 1, no round): the blocks' samples pooled, and each block's median
    (``*_us_blocks``); ``repeats`` is per block, ``blocks`` how many."""
    pooled = Samples(blocks[0].nbytes, **{p: tuple(x for s in blocks for x in getattr(s, p))
                                          for p in MEASUREMENTS.values()})
    rec = pair_record(layout, a, b, 1, None, pooled, settings, extra)
    rec["blocks"] = len(blocks)
    for p in MEASUREMENTS.values():
        rec[f"{p}_blocks"] = [float(np.median(getattr(s, p))) for s in blocks]
    return rec
