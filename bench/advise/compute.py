"""Compute time per step on one rank, before communication and the bubble: its share of the
model's FLOPs at ``device.flops_per_s`` (:class:`Flops`, a lower bound), as achieved
(:class:`bench.advise.achieved.Achieved`) or as a measured world-size-1 step scaled by that
share (:class:`Measured`). The rule and the knobs: docs/advise.md (Compute, Knobs).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.advise.achieved import Achieved
from bench.advise.comm import CommContext
from bench.models.configs import GPTConfig

BACKWARD = 2 / 3


RECOMPUTE = 1.0  # checkpointing every piece: one more forward (analytic.recompute_fraction)
ATTENTION_FORWARD = 4  # FLOPs of the attention core's forward per s^2 h: Q K^T and scores V


@dataclass(frozen=True)
class Flops:
    flops_per_s: float
    flops_16bit_per_s: float | None = None  # device.flops_16bit_per_s, where stated

    def speed(self, sixteen: bool) -> float:
        """Compute time of 16-bit (or fp32) work over the time at ``flops_per_s``."""
        return self.flops_per_s / self.flops_16bit_per_s if sixteen and self.flops_16bit_per_s \
            else 1.0

    def seconds(self, ctx: CommContext) -> float:
        return ctx.batch * rank_flops(ctx) / ctx.layout.tensor \
            / ctx.layout.context / self.flops_per_s

    def optimizer(self, ctx: CommContext) -> float:
        """Not priced at peak (a lower bound)."""
        return 0.0

    def recomputed(self, ctx: CommContext) -> float:
        """What full recomputation adds: one more forward of the rank's compute."""
        return self.seconds(ctx) * RECOMPUTE / 3

    @property
    def describe(self) -> str:
        return f"FLOPs / device.flops_per_s ({self.flops_per_s:.3g})"


@dataclass(frozen=True)
class Measured:
    step_s: float  # the world-size-1 step of this model at the same batch per replica
    source: str  # which record
    amp_ratio: float = 1.0  # world-size-1 autocast step / fp32 step of the same strategy
    knobs_included: bool = False  # the record ran the layout's own checkpoint / amp
    fixed_s: float = 0.0  # of step_s, paid whole by every rank (docs/advise.md, Compute)

    def speed(self, sixteen: bool) -> float:
        return self.amp_ratio if sixteen else 1.0

    def seconds(self, ctx: CommContext) -> float:
        share = rank_flops(ctx) / ctx.shape.flops_per_sample \
            / ctx.layout.tensor / ctx.layout.context
        return (self.step_s - self.fixed_s) * share + self.fixed_s

    def optimizer(self, ctx: CommContext) -> float:
        """Inside the measured step."""
        return 0.0

    def recomputed(self, ctx: CommContext) -> float:
        """One more forward of the scaled step (none where the record ran the knobs)."""
        return 0.0 if self.knobs_included else (self.seconds(ctx) - self.fixed_s) * RECOMPUTE / 3

    @property
    def describe(self) -> str:
        return f"measured world-size-1 step ({self.step_s * 1e3:.3g} ms, {self.source})"


Compute = Flops | Measured | Achieved


def rank_flops(ctx: CommContext) -> float:
    """FLOPs per sample of the rank's pieces (its stages), and what selective recomputation adds:
    its layers' attention-core forward, 4 s^2 h each (a third of the 12 s^2 h the block's FLOPs
    count for attention; full recomputation is :func:`factor`'s)."""
    flops = sum(ctx.shape.piece_flops[i] for i in ctx.my_pieces)
    cfg = ctx.shape.model.config
    if not ctx.layout.selective or not isinstance(cfg, GPTConfig):
        return flops
    blocks = sum(1 for i in ctx.my_pieces if 1 <= i <= cfg.layers)
    return flops + blocks * ATTENTION_FORWARD * cfg.seq_len ** 2 * cfg.embd


def factor(compute: Compute, sixteen: bool) -> float:
    """What autocast multiplies compute (and its recomputation) by (docs/advise.md, Knobs)."""
    if isinstance(compute, Measured) and compute.knobs_included:
        return 1.0
    return compute.speed(sixteen)
