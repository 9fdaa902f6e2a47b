"""The training strategies of :mod:`bench.training.strategies` as layouts: what each one is in
data x tensor x pipeline degrees and ZeRO stage at ``world`` ranks."""

from __future__ import annotations

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


def as_layout(name: str, spec: StrategySpec, world: int) -> Layout:
    """The layout of training strategy ``name`` (options ``spec``) at ``world`` ranks."""
    return AS_LAYOUT.get(name)(spec, world, float(getattr(spec, "bucket_mb", 25.0)))
