"""Compute time per step on one rank, before communication and the bubble.

Two sources, one rule: a rank computes its pipeline stages' share of the model's FLOPs
(:attr:`Shape.piece_flops`, the most loaded stage), divided by the tensor degree, for the
samples of its replica. ``Flops`` prices it at the profile's ``device.flops_per_s`` (the
throughput you state: the presets hold peak dense figures, so their predictions are a lower
bound on time). ``Measured`` scales a measured world-size-1 step of the same model and batch
per replica by the same fractions (the rank's FLOPs over the whole model's). Backward is two
thirds of compute (twice the forward's FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.advise.comm import CommContext

BACKWARD = 2 / 3


@dataclass(frozen=True)
class Flops:
    flops_per_s: float

    def seconds(self, ctx: CommContext) -> float:
        return ctx.batch * stage_flops(ctx) / ctx.layout.tensor / self.flops_per_s

    @property
    def describe(self) -> str:
        return f"FLOPs / device.flops_per_s ({self.flops_per_s:.3g})"


@dataclass(frozen=True)
class Measured:
    step_s: float  # the world-size-1 step of this model at the same batch per replica
    source: str  # which record

    def seconds(self, ctx: CommContext) -> float:
        return self.step_s * stage_flops(ctx) / ctx.shape.flops_per_sample / ctx.layout.tensor

    @property
    def describe(self) -> str:
        return f"measured world-size-1 step ({self.step_s * 1e3:.3g} ms, {self.source})"


Compute = Flops | Measured


def stage_flops(ctx: CommContext) -> float:
    """FLOPs per sample of the rank's pieces (its stages)."""
    return sum(ctx.shape.piece_flops[i] for i in ctx.my_pieces)
