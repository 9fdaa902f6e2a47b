"""Per-rank memory of a layout, from :mod:`bench.training.analytic`'s rules composed: the rank's
pipeline stages, their tensor-parallel shards (``tp_local``), then the data strategy's ``held``
over the data group on exactly those parameters (a strategy whose ranks differ, ps, says its
own). Activations: :func:`bench.training.analytic.held_activations` for tensor and pipeline
degrees together, equal to :func:`bench.training.analytic.activations` wherever that applies
(``tests/advise/test_advise.py``). docs/advise.md (Memory).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bench.advise.comm import CommContext, representative_stages
from bench.advise.layout import Layout
from bench.advise.shape import Shape
from bench.models.configs import GPTConfig
from bench.training.analytic import Acts, Estimate, Precision, held_activations, predict
from bench.training.scenario import StrategySpec
from bench.training.strategy import strategies


@dataclass(frozen=True)
class Memory:
    per_rank: Estimate  # the largest rank (over pipeline stages; worker or server for ps)
    stage: int  # the pipeline index of that rank (ps: -1 for a server)

    @property
    def total(self) -> int:
        return self.per_rank.total


def activations(shape: Shape, lay: Layout, batch: int, prec: Precision) -> int | None:
    cfg = shape.model.config
    if not isinstance(cfg, GPTConfig):
        return None
    plan = Acts.pipelined(cfg.layers, lay.pipeline, lay.microbatches, lay.schedule,
                          lay.stages_per_rank, tensor=lay.tensor) if lay.pipeline > 1 else \
        Acts(lay.tensor, lay.microbatches)
    every = frozenset(range(shape.model.num_pieces)) if lay.checkpoint else frozenset()
    return held_activations(shape.model, plan, every, batch, prec, lay.amp)


def states(shape: Shape, lay: Layout, batch: int, prec: Precision) -> tuple[Memory, ...]:
    """Model states and transient buffers of the candidates for the largest rank (activations
    left out): data index 0 (ZeRO-1 gives it the largest tensor first), tensor index 0, the
    largest over the pipeline indices; a data strategy whose ranks differ says its own
    (``Strategy.states``: ps, worker 0 and server 0)."""
    own = strategies().get(lay.dp).states
    if own is not None:
        return own(shape, lay, batch, prec)
    spec = _spec(lay.dp)
    best: Memory | None = None
    for pp in representative_stages(shape, lay):
        ctx = CommContext(shape, lay, batch, pp=pp)
        e = predict(shape.model, spec, lay.data, 0, prec, params=list(ctx.params))
        if best is None or e.total > best.total:
            best = Memory(e, pp)
    assert best is not None
    return (best,)


@functools.cache
def _spec(name: str) -> StrategySpec:
    """The strategy's spec, validated once per name (pydantic builds a validator each time)."""
    return StrategySpec(name=name)


def with_activations(held: tuple[Memory, ...], acts: int | None) -> Memory:
    """The largest candidate once activations are added (a ps server runs no forward)."""
    out = [m if m.stage < 0 else
           Memory(Estimate(m.per_rank.params, m.per_rank.grads, m.per_rank.optim,
                           m.per_rank.transient, acts), m.stage) for m in held]
    return max(out, key=lambda m: m.total)


def layout_memory(shape: Shape, lay: Layout, batch: int, prec: Precision) -> Memory:
    return with_activations(states(shape, lay, batch, prec), activations(shape, lay, batch, prec))
