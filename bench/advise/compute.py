"""Compute time per step on one rank, before communication and the bubble.

Two sources, one rule: a rank computes its pipeline stages' share of the model's FLOPs
(:attr:`Shape.piece_flops`, the most loaded stage), divided by the tensor degree, for the
samples of its replica. ``Flops`` prices it at the profile's ``device.flops_per_s`` (the
throughput you state: the presets hold peak dense figures, so their predictions are a lower
bound on time). ``Measured`` scales a measured world-size-1 step of the same model and batch
per replica by the same fractions (the rank's FLOPs over the whole model's), except a part
``fixed_s`` that every rank pays whole: the cost of the strategy's own machinery (DTensor's
dispatch per op, a pipeline schedule's work per microbatch), measured as the strategy's
world-size-1 step minus plain ddp's (``advise --from`` validation). Backward is two thirds of
compute (twice the forward's FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.advise.comm import CommContext

BACKWARD = 2 / 3


RECOMPUTE = 1.0  # checkpointing every piece: one more forward (analytic.recompute_fraction)


@dataclass(frozen=True)
class Flops:
    flops_per_s: float
    flops_16bit_per_s: float | None = None  # device.flops_16bit_per_s, where stated

    def speed(self, sixteen: bool) -> float:
        """Compute time of 16-bit (or fp32) work over the time at ``flops_per_s``."""
        return self.flops_per_s / self.flops_16bit_per_s if sixteen and self.flops_16bit_per_s \
            else 1.0

    def seconds(self, ctx: CommContext) -> float:
        return ctx.batch * stage_flops(ctx) / ctx.layout.tensor / self.flops_per_s

    @property
    def describe(self) -> str:
        return f"FLOPs / device.flops_per_s ({self.flops_per_s:.3g})"


@dataclass(frozen=True)
class Measured:
    step_s: float  # the world-size-1 step of this model at the same batch per replica
    source: str  # which record
    amp_ratio: float = 1.0  # world-size-1 autocast step / fp32 step of the same strategy
    knobs_included: bool = False  # the record ran the layout's own checkpoint / amp
    fixed_s: float = 0.0  # of step_s, paid whole by every rank (the module docstring)

    def speed(self, sixteen: bool) -> float:
        return self.amp_ratio if sixteen else 1.0

    def seconds(self, ctx: CommContext) -> float:
        share = stage_flops(ctx) / ctx.shape.flops_per_sample / ctx.layout.tensor
        return (self.step_s - self.fixed_s) * share + self.fixed_s

    @property
    def describe(self) -> str:
        return f"measured world-size-1 step ({self.step_s * 1e3:.3g} ms, {self.source})"


Compute = Flops | Measured


def stage_flops(ctx: CommContext) -> float:
    """FLOPs per sample of the rank's pieces (its stages)."""
    return sum(ctx.shape.piece_flops[i] for i in ctx.my_pieces)


def factor(compute: Compute, checkpoint: bool, sixteen: bool) -> float:
    """What the knobs multiply compute by (module docstring)."""
    if isinstance(compute, Measured) and compute.knobs_included:
        return 1.0
    return (1 + RECOMPUTE / 3 if checkpoint else 1.0) * compute.speed(sixteen)
