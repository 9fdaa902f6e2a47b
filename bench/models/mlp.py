"""A multi-layer perceptron classifier on synthetic teacher-labelled vectors."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from bench.models.base import MODELS, Batch, Chain, ModelSpec
from bench.models.data import classify, generator, teacher


@dataclass(frozen=True)
class MLPConfig:
    d_in: int
    hidden: int
    layers: int  # hidden layers
    classes: int


class Dense(nn.Module):
    """Linear + GELU; ``fc`` is the tensor-parallel unit (pairs of colwise/rowwise)."""

    def __init__(self, d_in: int, d_out: int, act: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return F.gelu(y) if self.act else y


def build(cfg: MLPConfig) -> Chain:
    dims = [cfg.d_in] + [cfg.hidden] * cfg.layers + [cfg.classes]
    return Chain([Dense(a, b, act=i < len(dims) - 2) for i, (a, b) in enumerate(itertools.pairwise(dims))])


def make_batch(cfg: MLPConfig, global_batch: int, step: int, seed: int) -> Batch:
    x = torch.randn(global_batch, cfg.d_in, generator=generator(seed, step))
    return Batch(x, classify(x, teacher(seed, (cfg.d_in, cfg.classes))), 0)


def tp_plan(cfg: MLPConfig) -> dict[str, str]:
    """Megatron pairs: even layers column-parallel, the following layer row-parallel. An odd
    last layer stays replicated."""
    n = cfg.layers + 1
    plan = {}
    for i in range(0, n - 1, 2):
        plan[f"pieces.{i}.fc"] = "colwise"
        plan[f"pieces.{i + 1}.fc"] = "rowwise"
    return plan


def _register(name: str, cfg: MLPConfig) -> None:
    MODELS.add(name, ModelSpec(
        name, "mlp", cfg, build=lambda: build(cfg),
        batch=lambda b, s, seed: make_batch(cfg, b, s, seed),
        loss=F.cross_entropy, tp_plan=lambda: tp_plan(cfg)))


_register("mlp", MLPConfig(d_in=32, hidden=32, layers=7, classes=8))
_register("mlp-large", MLPConfig(d_in=1024, hidden=4096, layers=8, classes=1000))
