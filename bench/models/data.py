"""Synthetic, fixed-seed, learnable data: the batch of step ``s`` is a pure function of
(seed, step, global batch size), so every rank and the single-process reference agree on it
without communicating. Targets come from a fixed random "teacher", so losses fall."""

from __future__ import annotations

import torch


def generator(seed: int, step: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def teacher(seed: int, shape: tuple[int, ...]) -> torch.Tensor:
    """A fixed random tensor that defines the task (independent of the step)."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed + 7919))


def classify(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Labels of a linear teacher: argmax(x @ w)."""
    return (x.flatten(1) @ w).argmax(dim=1)


def token_sequences(seed: int, step: int, batch: int, seq_len: int, vocab: int) -> torch.Tensor:
    """Sequences of ``seq_len + 1`` tokens following ``t[i+1] = (a * t[i] + b) mod vocab`` with
    a per-sequence (a, b) from a small set, so the next token is predictable from context."""
    g = generator(seed, step)
    start = torch.randint(0, vocab, (batch, 1), generator=g)
    rule = torch.randint(0, 4, (batch, 1), generator=g)
    a, b = 1 + 2 * rule, 3 + rule
    toks = [start]
    for _ in range(seq_len):
        toks.append((a * toks[-1] + b) % vocab)
    return torch.cat(toks, dim=1)
