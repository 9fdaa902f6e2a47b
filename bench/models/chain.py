"""A model as a chain of pieces (what the pipeline cuts into stages) and a batch of its data."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


class Chain(nn.Module):
    """``forward`` applies ``pieces`` in order; the pipeline splits the list into stages."""

    def __init__(self, pieces: list[nn.Module]) -> None:
        super().__init__()
        self.pieces = nn.ModuleList(pieces)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for p in self.pieces:
            x = p(x)
        return x


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor
    targets: torch.Tensor
    tokens: int  # tokens in the batch (0 for non-sequence models)

    def to(self, device: torch.device) -> Batch:
        return Batch(self.inputs.to(device), self.targets.to(device), self.tokens)

    def slice(self, start: int, stop: int) -> Batch:
        per = self.tokens // self.inputs.shape[0] if self.tokens else 0
        return Batch(self.inputs[start:stop], self.targets[start:stop], per * (stop - start))
