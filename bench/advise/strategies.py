"""The training strategies of :mod:`bench.training.strategies` as layouts: what each one is in
data x tensor x pipeline degrees and ZeRO stage at ``world`` ranks, with the options every
strategy takes (``checkpoint: true``, ``precision``). Selective checkpointing (a piece list or
a fraction) has no layout: the advice checkpoints every piece or none."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from bench.advise.layout import Layout
from bench.training.rules import StrategySpec
from kernels.registry import Registry

AsLayout = Callable[[StrategySpec, int, float], Layout]
AS_LAYOUT: Registry[AsLayout] = Registry("strategy")


def _data(zero: int) -> AsLayout:
    return lambda s, n, mb: Layout(data=n, zero=zero, bucket_mb=mb,
                                   hook=s.hook if zero == 0 else "default")


for _i, _name in enumerate(("ddp", "zero1", "zero2", "zero3")):
    AS_LAYOUT.add(_name, _data(_i))
AS_LAYOUT.add("tensor", lambda s, n, mb: Layout(tensor=n))
AS_LAYOUT.add("pipeline", lambda s, n, mb: Layout(
    pipeline=n, microbatches=s.microbatches, schedule=s.schedule,
    stages_per_rank=s.pipeline_stages_per_rank))
AS_LAYOUT.add("hybrid", lambda s, n, mb: Layout(data=n // s.tensor_degree, zero=3,
                                                tensor=s.tensor_degree))
AS_LAYOUT.add("ps", lambda s, n, mb: Layout(data=n - s.servers, servers=s.servers))


def as_layout(name: str, spec: StrategySpec, world: int) -> Layout:
    """The layout of training strategy ``name`` (options ``spec``) at ``world`` ranks; ValueError
    for selective checkpointing."""
    lay = AS_LAYOUT.get(name)(spec, world, float(getattr(spec, "bucket_mb", 25.0)))
    ckpt = getattr(spec, "checkpoint", False)
    if ckpt not in (True, False):
        raise ValueError(f"checkpoint {ckpt!r}: the advice models every piece or none")
    return dataclasses.replace(lay, checkpoint=bool(ckpt), amp=getattr(spec, "precision", "fp32"))
