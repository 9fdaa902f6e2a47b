"""A small ResNet-style convnet: a stem, residual basic blocks (two 3x3 convs with BatchNorm-free
GroupNorm, so data-parallel ranks need no cross-rank statistics and match a single process
exactly), global average pooling and a linear classifier."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from bench.models.base import Batch, Chain, add_family
from bench.models.configs import ConvConfig
from bench.models.data import classify, generator, teacher


class Stem(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


class BasicBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(4, c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(4, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.norm1(self.conv1(x)))
        return F.relu(x + self.norm2(self.conv2(y)))


class Classifier(nn.Module):
    def __init__(self, c: int, classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.mean(dim=(2, 3)))


def build(cfg: ConvConfig) -> Chain:
    return Chain([Stem(cfg.channels), *(BasicBlock(cfg.channels) for _ in range(cfg.blocks)),
                  Classifier(cfg.channels, cfg.classes)])


def make_batch(cfg: ConvConfig, global_batch: int, step: int, seed: int) -> Batch:
    x = torch.randn(global_batch, 3, cfg.image, cfg.image, generator=generator(seed, step))
    pooled = F.avg_pool2d(x, 4)
    return Batch(x, classify(pooled, teacher(seed, (pooled[0].numel(), cfg.classes))), 0)


add_family(ConvConfig.family, build, make_batch, F.cross_entropy)
