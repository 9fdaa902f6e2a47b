"""The torch side of expert parallelism: :class:`AllToAll`, the :class:`bench.models.moe.Exchange`
that moves a MoE layer's assignments to the ranks holding their experts and back with
``all_to_all_single`` and per-peer split sizes, the counts exchanged first; backward mirrors it."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist


class _AllToAllV(torch.autograd.Function):
    """``rows`` split ``send`` ways out, ``recv`` ways in; backward sends the gradient back."""

    @staticmethod
    def forward(ctx: Any, rows: torch.Tensor, recv: list[int], send: list[int],
                group: dist.ProcessGroup) -> torch.Tensor:
        ctx.recv, ctx.send, ctx.group = recv, send, group
        out = rows.new_empty((sum(recv), *rows.shape[1:]))
        dist.all_to_all_single(out, rows.contiguous(), recv, send, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        out = grad.new_empty((sum(ctx.send), *grad.shape[1:]))
        dist.all_to_all_single(out, grad.contiguous(), ctx.send, ctx.recv, group=ctx.group)
        return out, None, None, None


class AllToAll:
    """One MoE layer's exchange over an expert-parallel group of ``size`` ranks, each holding
    ``held`` consecutive experts (member i: experts i * held ..)."""

    def __init__(self, group: dist.ProcessGroup, size: int, held: int) -> None:
        self.group, self.size, self.held = group, size, held
        self.sent: list[int] = []
        self.received: list[int] = []

    def _blocks(self, counts: list[int]) -> list[int]:
        h = self.held
        return [sum(counts[i * h:(i + 1) * h]) for i in range(self.size)]

    def dispatch(self, rows: torch.Tensor, counts: list[int]) -> tuple[torch.Tensor, list[int]]:
        mine = torch.tensor(counts, dtype=torch.int64, device=rows.device)
        theirs = torch.empty_like(mine)
        dist.all_to_all_single(theirs, mine, group=self.group)  # each member's counts for mine
        got = theirs.tolist()
        self.sent, self.received = self._blocks(counts), self._blocks(got)
        return _AllToAllV.apply(rows, self.received, self.sent, self.group), got

    def combine(self, rows: torch.Tensor) -> torch.Tensor:
        return _AllToAllV.apply(rows, self.sent, self.received, self.group)
