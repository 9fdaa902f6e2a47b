"""A multi-layer perceptron classifier on synthetic teacher-labelled vectors."""

from __future__ import annotations

import itertools

import torch
from torch import nn
from torch.nn import functional as F

from bench.models.base import Batch, Chain, add_family
from bench.models.configs import MLPConfig
from bench.models.data import classify, generator, teacher


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
    return Chain([Dense(a, b, act=i < cfg.pieces - 1)
                  for i, (a, b) in enumerate(itertools.pairwise(cfg.dims))])


def make_batch(cfg: MLPConfig, global_batch: int, step: int, seed: int) -> Batch:
    x = torch.randn(global_batch, cfg.d_in, generator=generator(seed, step))
    return Batch(x, classify(x, teacher(seed, (cfg.d_in, cfg.classes))), 0)


add_family(MLPConfig.family, build, make_batch, F.cross_entropy)
