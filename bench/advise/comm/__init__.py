"""Communication models, one file per training strategy, registered by name: ``@comm("ddp")``
on a function from a :class:`CommContext` to the :class:`~bench.advise.calls.Call` list the
strategy issues per step on that rank. Every module of this package is imported on first use
(:func:`models`), so a new strategy's model is one new file here.

A layout's communication is the sum of its parts (:func:`parts`): the data-parallel strategy of
its ZeRO stage over the data group, tensor parallelism over the tensor group, the pipeline over
the pipeline group (a parameter-server layout is ``ps`` alone, between workers and servers);
each part sees only the rank's own stages and its tensor-parallel shards.
"""

from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from bench.advise.calls import Call
from bench.advise.layout import Layout
from bench.advise.shape import Shape, local_params
from bench.training.analytic import Param
from bench.training.stages import balanced_split
from kernels.registry import Registry


@dataclass(frozen=True)
class Bytes:
    """Element sizes: parameters, gradients (as reduced) and activations."""

    param: int = 4
    grad: int = 4
    act: int = 4


@dataclass(frozen=True)
class CommContext:
    shape: Shape
    layout: Layout
    batch: int  # samples per data-parallel replica per step
    bytes: Bytes = Bytes()
    pp: int = 0  # the rank's index in its pipeline group
    server: int | None = None  # ps: this rank is server s (None: a worker)

    @functools.cached_property
    def stage_starts(self) -> tuple[int, ...]:
        """First piece of each stage, then the number of pieces."""
        n = self.layout.stages
        return (*stage_starts(self.shape.piece_sizes, n), self.shape.model.num_pieces)

    @property
    def my_stages(self) -> list[int]:
        """This rank's stages: pp, pp + p, ... (the interleaved layout)."""
        return [self.pp + k * self.layout.pipeline for k in range(self.layout.stages_per_rank)]

    @functools.cached_property
    def my_pieces(self) -> frozenset[int]:
        s = self.stage_starts
        return frozenset(i for st in self.my_stages for i in range(s[st], s[st + 1]))

    @functools.cached_property
    def params(self) -> tuple[Param, ...]:
        """The rank's parameters (its stages), with tensor-parallel local shapes."""
        return local_params(self.shape, self.layout.tensor, self.my_pieces)

    @property
    def microbatch(self) -> int:
        return self.batch // self.layout.microbatches


@functools.cache
def stage_starts(piece_sizes: tuple[int, ...], stages: int) -> tuple[int, ...]:
    """The pipeline's stage cut (:func:`bench.training.stages.balanced_split`)."""
    return tuple(balanced_split(list(piece_sizes), stages))


def representative_stages(shape: Shape, layout: Layout) -> list[int]:
    """One pipeline index per distinct kind of rank: ranks whose stages hold pieces of the same
    sizes and FLOPs, and are alike in being first or last, issue the same calls and compute the
    same (the middle stages of a transformer are all one kind)."""
    seen: dict[tuple[object, ...], int] = {}
    for pp in range(layout.pipeline):
        ctx = CommContext(shape, layout, 1, pp=pp)
        sig = (tuple((shape.piece_sizes[i], shape.piece_flops[i]) for i in sorted(ctx.my_pieces)),
               0 in ctx.my_stages, layout.stages - 1 in ctx.my_stages)
        seen.setdefault(sig, pp)
    return list(seen.values())


def numel(p: Param) -> int:
    return math.prod(p.shape)


CommModel = Callable[[CommContext], list[Call]]
COMM: Registry[CommModel] = Registry("communication model")


def comm(name: str) -> Callable[[CommModel], CommModel]:
    return COMM.register(name)


@functools.cache
def models() -> Registry[CommModel]:
    """The registry, every module of this package imported."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return COMM


def parts(layout: Layout) -> list[str]:
    """The registered models a layout is made of."""
    if layout.servers:
        return ["ps"]
    out = [layout.zero_name] if layout.data > 1 else []
    return out + [name for name, deg in (("tensor", layout.tensor), ("pipeline", layout.pipeline))
                  if deg > 1]


def layout_calls(ctx: CommContext) -> list[Call]:
    reg = models()
    return [c for name in parts(ctx.layout) for c in reg.get(name)(ctx)]
