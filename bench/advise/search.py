"""Every valid layout of a world size, priced and ranked.

Enumerated: tensor degree t dividing the world and the model's heads and sharded widths;
pipeline degree p dividing what is left, with at most as many stages as pieces; data degree
d = world / (t p) dividing the global batch; ZeRO stage 0-3 when d > 1 (0-1 with a pipeline:
ZeRO-2/3 re-gather per microbatch, which this model does not price); with a pipeline,
microbatches m = p, 2p, 4p, 8p that divide the batch per replica, under GPipe, 1F1B and (m a
multiple of p, 2p stages at most the pieces) interleaved 1F1B with v = 2. The parameter server
``ps[servers=N]`` for N = 1, 2, 4, ... up to half the world whose W - N workers divide the
global batch (pure data parallelism: no tensor or pipeline degree). Each of these with and
without activation checkpointing of every piece, and under each autocast precision asked
(``amps``: bf16 beside fp32 when the question's precision is fp32; under ``mixed`` every layout
already computes in 16 bits). Ranked: layouts that fit the device memory first, by predicted
step time (ties: less memory), then the rest by memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.advise.evaluate import Job, Result, evaluate
from bench.advise.layout import Layout, divisors
from bench.advise.memory import layout_memory
from bench.models.catalog import ModelInfo

MICROBATCH_FACTORS = (1, 2, 4, 8)


class NoFit(ValueError):
    """No layout of the world size fits; the message names the smallest world size that does."""


def layouts(model: ModelInfo, world: int, global_batch: int, bucket_mb: float = 25.0,
            amps: tuple[str, ...] = ("fp32",)) -> Iterator[tuple[Layout, int]]:
    """(layout, batch per replica) for every valid combination."""
    for lay, batch in _plain(model, world, global_batch, bucket_mb):
        for ckpt in (False, True):
            for amp in amps:
                yield dataclasses.replace(lay, checkpoint=ckpt, amp=amp), batch


def _plain(model: ModelInfo, world: int, global_batch: int, bucket_mb: float
           ) -> Iterator[tuple[Layout, int]]:
    for t in divisors(world):
        try:
            Layout(tensor=t).check(model, 1)
        except ValueError:
            continue
        for p in divisors(world // t):
            d = world // (t * p)
            if global_batch % d:
                continue
            batch = global_batch // d
            for lay in _variants(d, t, p, batch, bucket_mb, model.num_pieces):
                try:
                    lay.check_pipeline(model, batch)
                except ValueError:
                    continue
                yield lay, batch
    n = 1
    while 2 * n <= world:
        if global_batch % (world - n) == 0:
            yield Layout(data=world - n, servers=n), global_batch // (world - n)
        n *= 2


def _variants(d: int, t: int, p: int, batch: int, bucket_mb: float, pieces: int
              ) -> Iterator[Layout]:
    zeros = range(4 if p == 1 else 2) if d > 1 else range(1)
    if p == 1:
        pipes = [(1, "1f1b", 1)]
    else:
        ms = [p * k for k in MICROBATCH_FACTORS if batch % (p * k) == 0]
        pipes = [(m, s, 1) for m in ms for s in ("gpipe", "1f1b")]
        pipes += [(m, "interleaved", 2) for m in ms if 2 * p <= pieces]
    for z in zeros:
        for m, sched, v in pipes:
            yield Layout(d, t, p, z, m, sched, v, bucket_mb)


@dataclass(frozen=True)
class Ranked:
    world: int
    results: list[Result]  # best first

    @property
    def best(self) -> Result | None:
        return self.results[0] if self.results and self.results[0].fits else None

    @property
    def margin(self) -> float | None:
        """Runner-up's step over the best's, minus 1 (fitting layouts only)."""
        fit = [r for r in self.results if r.fits]
        return fit[1].step.time / fit[0].step.time - 1 if len(fit) > 1 else None


Jobs = Callable[[int], Job]  # batch per replica -> the job (the caller caches them)


def search(jobs: Jobs, model: ModelInfo, world: int, global_batch: int,
           bucket_mb: float = 25.0, amps: tuple[str, ...] = ("fp32",)) -> Ranked:
    out = [evaluate(jobs(batch), lay)
           for lay, batch in layouts(model, world, global_batch, bucket_mb, amps)]
    if not out:
        raise ValueError(f"no layout of {model.name} runs on {world} ranks with a global batch "
                         f"of {global_batch} (the data degree must divide it)")
    out.sort(key=lambda r: (not r.fits, r.step.time if r.fits else r.memory.total,
                            r.memory.total))
    return Ranked(world, out)


def smallest_fit(jobs: Jobs, model: ModelInfo, world: int, global_batch: int, step: int,
                 limit: int) -> int | None:
    """The smallest world size above ``world`` (multiples of ``step``, up to ``limit``) where some
    layout fits the device memory (memory only: nothing is timed)."""
    w = (world // step + 1) * step
    while w <= limit:
        for lay, batch in _plain(model, w, global_batch, 25.0):
            lay = dataclasses.replace(lay, checkpoint=True)  # the least memory of each layout
            job = jobs(batch)
            if job.memory_limit is None or layout_memory(
                    job.shape, lay, batch, job.precision).total <= job.memory_limit:
                return w
        w += step
    return None
