"""Every valid layout of a world size (each strategy's ``layouts``, with each recomputation and
autocast precision), priced and ranked: those that fit first, by step (ties: less memory), then
the rest by memory; with ``keep``, only the layouts that can enter the first ``keep`` are priced,
in order of a lower bound on their step (:func:`bench.advise.evaluate.floor`), the same first
rows as the exhaustive search. docs/advise.md (Search).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.advise.evaluate import Job, Result, evaluate, floor, memory_of
from bench.advise.layout import Layout
from bench.advise.memory import layout_memory
from bench.advise.software import DEFAULT
from bench.advise.space import Space
from bench.argtypes import CommbenchError
from bench.models.catalog import ModelInfo
from bench.training.strategy import strategies


class NoFit(CommbenchError):
    """No layout of the world size fits; the message names the smallest world size that does."""


def plain_layouts(model: ModelInfo, world: int, global_batch: int, bucket_mb: float = Layout.bucket_mb,
                  context_parallel: bool = DEFAULT.context_parallel
                  ) -> Iterator[tuple[Layout, int]]:
    """(layout, batch per replica) of every strategy's offer, without the knobs; with context
    degrees where the software runs context parallelism."""
    space = Space(model, world, global_batch, bucket_mb, context_parallel)
    for s in strategies():
        yield from strategies().get(s).layouts(space)


def layouts(model: ModelInfo, world: int, global_batch: int, bucket_mb: float = Layout.bucket_mb,
            amps: tuple[str, ...] = ("fp32",), recomputes: tuple[str, ...] = DEFAULT.recomputes,
            context_parallel: bool = DEFAULT.context_parallel) -> Iterator[tuple[Layout, int]]:
    """(layout, batch per replica) for every valid combination, with each knob."""
    for lay, batch in plain_layouts(model, world, global_batch, bucket_mb, context_parallel):
        for rc in recomputes:
            for amp in amps:  # lay.recomputing(rc) with ``amp``, in one replace
                yield dataclasses.replace(lay, checkpoint=rc == "full",
                                          selective=rc == "selective", amp=amp), batch


@dataclass(frozen=True)
class Ranked:
    world: int
    results: list[Result]  # best first
    pruned: int = 0  # layouts left unpriced: they cannot enter the first ``keep`` (search)

    @property
    def best(self) -> Result | None:
        return self.results[0] if self.results and self.results[0].fits else None

    @property
    def margin(self) -> float | None:
        """Runner-up's step over the best's, minus 1 (fitting layouts only)."""
        fit = [r for r in self.results if r.fits]
        return fit[1].step.time / fit[0].step.time - 1 if len(fit) > 1 else None


Jobs = Callable[[int], Job]  # batch per replica -> the job (the caller caches them)


def _order(r: Result) -> tuple[bool, float, int]:
    return (not r.fits, r.step.time if r.fits else r.memory.total, r.memory.total)


def search(jobs: Jobs, model: ModelInfo, world: int, global_batch: int,
           bucket_mb: float = Layout.bucket_mb, amps: tuple[str, ...] = ("fp32",),
           keep: int | None = None, select: Callable[[Layout], bool] | None = None,
           recomputes: tuple[str, ...] = DEFAULT.recomputes,
           context_parallel: bool = DEFAULT.context_parallel) -> Ranked:
    """The layouts ranked (module docstring); ``select``: only the layouts it accepts."""
    cands = [(lay, b) for lay, b in layouts(model, world, global_batch, bucket_mb, amps,
                                            recomputes, context_parallel)
             if select is None or select(lay)]
    if not cands:
        raise CommbenchError(f"no layout of {model.name} runs on {world} ranks with a global batch "
                             f"of {global_batch} (the data degree must divide it)")
    if keep is None:
        return Ranked(world, sorted((evaluate(jobs(b), lay) for lay, b in cands), key=_order))
    out: list[Result] = []
    for bound, _, lay, b in sorted((floor(jobs(b), lay), i, lay, b)
                                   for i, (lay, b) in enumerate(cands)):
        if len(out) >= keep and bound > out[keep - 1].step.time:
            break  # this and every later bound exceed the keep-th step: none can enter
        job = jobs(b)
        if len(out) >= keep and floor(job, lay, calls=True) > out[keep - 1].step.time:
            continue  # its calls exposed in full already exceed the keep-th step
        mem = memory_of(job, lay)
        if job.fits(mem):  # in order (after its equals, as a stable sort puts it); the first
            bisect.insort(out, evaluate(job, lay, mem), key=_order)  # ``keep`` only
            del out[keep:]
    if len(out) < keep:  # every layout was reached: then the rest by memory
        unfit = sorted((m.total, i, lay, b, m) for i, (lay, b) in enumerate(cands)
                       if not jobs(b).fits(m := memory_of(jobs(b), lay)))
        out += sorted((evaluate(jobs(b), lay, m) for *_, lay, b, m in unfit[:keep - len(out)]),
                      key=_order)
    return Ranked(world, out[:keep], len(cands) - min(len(out), keep))


def smallest_fit(jobs: Jobs, model: ModelInfo, world: int, global_batch: int, step: int,
                 limit: int) -> int | None:
    """The smallest world size above ``world`` (multiples of ``step``, up to ``limit``) where some
    layout fits the device memory (memory only: nothing is timed)."""
    w = (world // step + 1) * step
    while w <= limit:
        for lay, batch in plain_layouts(model, w, global_batch):
            lay = dataclasses.replace(lay, checkpoint=True)  # the least memory of each layout
            job = jobs(batch)
            if job.fits(layout_memory(job.shape, lay, batch, job.precision)):
                return w
        w += step
    return None
