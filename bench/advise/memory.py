"""Per-rank memory of a layout, from :mod:`bench.training.analytic`'s rules composed: the rank's
pipeline stages, their tensor-parallel shards (``tp_local``), then the ZeRO stage's rule over the
data group (ddp, zero1, zero2, zero3 at ``data`` ranks) on exactly those parameters.

Activations generalise the analytic model's formula (Korthikanti et al. 2022, 16-bit, flash
attention, no recomputation) to tensor and pipeline degrees together: per layer
``s * b * h * (10 + 24 / t)`` with b the microbatch, for ``ceil(L / stages) * v * in_flight``
layers (in flight: m microbatches under GPipe, min(m, p) under 1F1B and interleaved), plus the
fp32 logits ``4 * s * b * V``; it equals :func:`bench.training.analytic.activations` wherever that
applies (``tests/test_advise.py``). Other families have no activation model (None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.advise.comm import CommContext, representative_stages
from bench.advise.layout import Layout
from bench.advise.shape import Shape
from bench.models.configs import GPTConfig
from bench.training.analytic import Estimate, Precision, predict
from bench.training.scenario import StrategySpec


@dataclass(frozen=True)
class Memory:
    per_rank: Estimate  # the largest rank (over pipeline stages)
    stage: int  # the pipeline index of that rank

    @property
    def total(self) -> int:
        return self.per_rank.total


def activations(shape: Shape, lay: Layout, batch: int, prec: Precision) -> int | None:
    cfg = shape.model.config
    if not isinstance(cfg, GPTConfig):
        return None
    mb, layers = batch // lay.microbatches, cfg.layers
    if lay.pipeline > 1:
        in_flight = lay.microbatches if lay.schedule == "gpipe" else min(lay.microbatches,
                                                                         lay.pipeline)
        layers = math.ceil(cfg.layers / lay.stages) * lay.stages_per_rank * in_flight
    per_layer = cfg.seq_len * mb * cfg.embd * (10 + 24 / lay.tensor)
    return int(layers * per_layer * prec.param_bytes / 2 + 4 * cfg.seq_len * mb * cfg.vocab)


def layout_memory(shape: Shape, lay: Layout, batch: int, prec: Precision) -> Memory:
    """Memory of the largest rank: data index 0 (ZeRO-1 gives it the largest tensor first),
    tensor index 0, every pipeline index tried."""
    spec = StrategySpec(name=lay.zero_name if lay.data > 1 else "ddp")
    acts = activations(shape, lay, batch, prec)
    best: Memory | None = None
    for pp in representative_stages(shape, lay):
        ctx = CommContext(shape, lay, batch, pp=pp)
        e = predict(shape.model, spec, lay.data, 0, prec, params=list(ctx.params))
        e = Estimate(e.params, e.grads, e.optim, e.transient, acts)
        if best is None or e.total > best.total:
            best = Memory(e, pp)
    assert best is not None
    return best
