"""The layouts a world size allows, as strategies offer them to the search: each :class:`Point`
splits the world into tensor, context, pipeline and data degrees, with the pipeline variants the
model and batch allow (docs/advise.md, Search). Context degrees cut a sequence into 2 c
load-balanced chunks (rank i holds chunks i and 2c - 1 - i: Llama 3, arXiv 2407.21783, Section
3.3.2).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.advise.layout import Layout, divisors
from bench.models.catalog import ModelInfo
from bench.training.rules import check_degree
from bench.training.stages import check_pipeline

MICROBATCH_FACTORS = (1, 2, 4, 8)
Pipe = tuple[int, str, int]  # (microbatches, schedule, stages per rank)


@dataclass(frozen=True)
class Point:
    data: int
    tensor: int
    pipeline: int
    batch: int  # samples per data-parallel replica
    pipes: tuple[Pipe, ...]  # the pipeline variants the model and batch allow
    context: int = 1  # context parallelism (1: none)


@dataclass(frozen=True)
class Space:
    model: ModelInfo
    world: int
    global_batch: int
    bucket_mb: float = Layout.bucket_mb
    context_parallel: bool = False  # the software runs context parallelism

    def contexts(self) -> list[int]:
        """The context degrees: 1, and with context parallelism each divisor of the world that
        cuts the model's sequence into 2 c whole chunks."""
        seq = getattr(self.model.config, "seq_len", 0) if self.context_parallel else 0
        return [c for c in divisors(self.world) if c == 1 or (seq and seq % (2 * c) == 0)]

    @functools.cached_property
    def points(self) -> tuple[Point, ...]:
        out = []
        kv = getattr(self.model.config, "kv_heads", 0)  # tensor ranks hold whole key/value heads
        tensors = [t for t in divisors(self.world) if t == 1 or (
            _passes(check_degree, self.model, t) and not (kv and kv % t))]
        for c in self.contexts():
            for t in tensors:
                if (self.world // c) % t:
                    continue
                for p in divisors(self.world // (c * t)):
                    d = self.world // (c * t * p)
                    if self.global_batch % d:
                        continue
                    batch = self.global_batch // d
                    pieces = self.model.num_pieces
                    pipes = tuple((m, s, v) for m, s, v in _pipes(p, batch, pieces)
                                  if _passes(check_pipeline, p, v, s, m, pieces, batch))
                    if pipes:
                        out.append(Point(d, t, p, batch, pipes, c))
        return tuple(out)


def _pipes(p: int, batch: int, pieces: int) -> list[Pipe]:
    if p == 1:
        return [(1, "1f1b", 1)]
    ms = list(dict.fromkeys([*(p * k for k in MICROBATCH_FACTORS if batch % (p * k) == 0),
                             *([batch] if batch > p else [])]))  # ... and micro-batches of 1
    return [*((m, s, 1) for m in ms for s in ("gpipe", "1f1b")),
            *((m, "interleaved", 2) for m in ms if 2 * p <= pieces)]


def _passes(check: Callable[..., None], *args: object) -> bool:
    """Whether ``check(*args)`` raises no ValueError."""
    try:
        check(*args)
    except ValueError:
        return False
    return True


def data_layouts(space: Space, dp: str, alone: bool = False, pipeline: bool = True
                 ) -> Iterator[tuple[Layout, int]]:
    """Data strategy ``dp`` at every point with a data group (data x context ranks holding the
    same weights; ``alone``: also the points without one), with a pipeline unless ``pipeline``
    is False."""
    for pt in space.points:
        if (pt.data * pt.context == 1 and not alone) or (pt.pipeline > 1 and not pipeline):
            continue
        for m, sched, v in pt.pipes:
            yield Layout(pt.data, pt.tensor, pt.pipeline, dp=dp, microbatches=m, schedule=sched,
                         stages_per_rank=v, bucket_mb=space.bucket_mb,
                         context=pt.context), pt.batch
