"""A mixture-of-experts decoder: the GPT of :mod:`bench.models.gpt` with every MLP replaced by
:class:`MoE`, a softmax router over ``experts`` SwiGLU experts of which each token takes its
``top_k`` (gates renormalised over them, as Mixtral).

Capacity (GShard's, with the sequence as the group): within one sequence, expert ``e`` takes at
most ``cfg.capacity`` assignments, first choices first, earlier positions first; the rest are
dropped (the residual passes). Reading one sequence only, a rank holding a slice of the batch
drops what one process drops, so expert parallelism reproduces the single process's loss.
The experts' weights are stacked on dim 0; an expert-parallel rank keeps the slice ``first ..``
and sets :attr:`MoE.exchange` (:mod:`bench.training.strategies.expert`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn
from torch.nn import functional as F

from bench.models import gpt
from bench.models.base import Chain, add_family
from bench.models.configs import MoEConfig
from bench.models.gpt import loss, make_batch  # moe.make_batch, moe.loss: advise's custom_moe


@dataclass(frozen=True)
class Routed:
    """One forward's routing on this rank: assignments per expert before and after capacity."""

    routed: tuple[int, ...]
    kept: tuple[int, ...]


class Exchange(Protocol):
    """Moves rows grouped by expert (``counts`` per expert, all experts) to the ranks holding
    them and back: ``dispatch`` returns the rows this rank's experts take and how many of them
    each local expert takes (grouped by source rank, then expert); ``combine`` undoes it."""

    def dispatch(self, rows: torch.Tensor, counts: list[int]) -> tuple[torch.Tensor, list[int]]: ...

    def combine(self, rows: torch.Tensor) -> torch.Tensor: ...


class MoE(nn.Module):
    def __init__(self, cfg: MoEConfig) -> None:
        super().__init__()
        e, h, f = cfg.experts, cfg.embd, cfg.ffn
        self.cfg = cfg
        self.router = nn.Linear(h, e, bias=False)
        self.w_gate = nn.Parameter(torch.empty(e, h, f))
        self.w_up = nn.Parameter(torch.empty(e, h, f))
        self.w_down = nn.Parameter(torch.empty(e, f, h))
        for w, fan_in in ((self.w_gate, h), (self.w_up, h), (self.w_down, f)):
            nn.init.normal_(w, std=fan_in ** -0.5)  # skipped on the meta device (base.py)
        self.first = 0  # the first expert held here (expert parallelism holds a slice)
        self.exchange: Exchange | None = None
        self.last: Routed | None = None  # the last forward's routing (expert parallelism reads it)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(expert, gate, kept) per (sample, choice, position): [B, k, T] each."""
        cfg = self.cfg
        probs = F.softmax(self.router(x), dim=-1)  # [B, T, E]
        gate, idx = torch.topk(probs, cfg.top_k, dim=-1)
        gate = gate / gate.sum(dim=-1, keepdim=True)
        idx, gate = idx.transpose(1, 2), gate.transpose(1, 2)  # [B, k, T]: choice-major
        onehot = F.one_hot(idx, cfg.experts).flatten(1, 2)  # [B, k*T, E]
        position = (onehot.cumsum(dim=1) * onehot).sum(-1).view_as(idx)  # 1-based in its queue
        return idx, gate, position <= cfg.capacity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        idx, gate, kept = self.route(x)
        token = torch.arange(b * t, device=x.device).view(b, 1, t).expand_as(idx)
        flat_e, flat_tok, flat_g = idx[kept], token[kept], gate[kept]
        order = torch.sort(flat_e, stable=True).indices  # grouped by expert, stable: deterministic
        flat_e, flat_tok, flat_g = flat_e[order], flat_tok[order], flat_g[order]
        counts = torch.bincount(flat_e, minlength=self.cfg.experts).tolist()
        self.last = Routed(tuple(torch.bincount(idx.flatten(), minlength=self.cfg.experts).tolist()),
                           tuple(counts))
        rows = x.reshape(b * t, h).index_select(0, flat_tok)
        if self.exchange is None:
            out = self._experts(rows, counts)
        else:
            mine, local = self.exchange.dispatch(rows, counts)
            out = self.exchange.combine(self._experts(mine, local))
        y = torch.zeros(b * t, h, dtype=out.dtype, device=x.device)
        return y.index_add(0, flat_tok, out * flat_g.unsqueeze(1)).view(b, t, h)

    def _experts(self, rows: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """Each held expert on its rows: ``counts`` repeats over the held experts (a block per
        source rank under expert parallelism, one block without)."""
        held = self.w_gate.shape[0]
        out, at = [], 0
        for i, n in enumerate(counts):
            e = i % held
            chunk = rows[at:at + n]
            out.append((F.silu(chunk @ self.w_gate[e]) * (chunk @ self.w_up[e])) @ self.w_down[e])
            at += n
        return torch.cat(out) if out else rows[:0]


def build(cfg: MoEConfig) -> Chain:
    return gpt.build(cfg, functools.partial(gpt.Block, ffn=MoE, name="moe"))


add_family(MoEConfig.family, build, make_batch, loss)
