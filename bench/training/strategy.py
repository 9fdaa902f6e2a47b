"""What a training strategy is: a registered factory from a :class:`TrainContext` to a
:class:`Trainer` that runs one optimiser step on its share of a global batch.

Strategies never time themselves and never count bytes: :mod:`bench.training.measure` owns the
clock, :mod:`bench.training.comm` counts traffic and :mod:`bench.training.memory` reads the
tensors each trainer reports as held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from bench.models.base import Batch, Chain, ModelSpec
from bench.training.options import Amp, apply_options
from bench.training.rules import RULES, Check
from kernels.registry import Registry

if TYPE_CHECKING:
    from bench.training.scenario import StrategySpec


@dataclass(frozen=True)
class TrainContext:
    spec: StrategySpec
    model: ModelSpec
    rank: int
    world: int
    device: torch.device
    backend: str  # "gloo" or "nccl"
    seed: int
    lr: float

    def build_model(self) -> Chain:
        """The full model, identically initialised on every rank and in the reference, with the
        strategy's checkpointing and precision applied to its pieces (:mod:`.options`)."""
        torch.manual_seed(self.seed)
        model = self.model.build()
        return apply_options(model, self.spec.checkpointed(len(model.pieces)), self.amp)

    @property
    def amp(self) -> Amp:
        return Amp.of(self.spec.precision, self.device)

    def optimizer(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adam(params, lr=self.lr, foreach=False)


class Trainer:
    """One strategy bound to a model on this rank.

    ``dp_degree`` is how many data-parallel replicas split the global batch; ``replica`` is this
    rank's replica index. ``step`` returns this rank's loss for its replica's share, or None on
    ranks that never see the loss (pipeline stages before the last).
    """

    dp_degree: int = 1
    replica: int = 0

    def step(self, batch: Batch) -> float | None:
        raise NotImplementedError

    def local_share(self, batch: Batch) -> Batch:
        n = batch.inputs.shape[0] // self.dp_degree
        return batch.slice(self.replica * n, (self.replica + 1) * n)

    def modules(self) -> list[nn.Module]:
        """Modules whose parameters (and their ``.grad``) this rank holds."""
        raise NotImplementedError

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """Optimisers whose ``state`` this rank holds (local shards only)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release process groups or hooks the strategy made."""


@dataclass(frozen=True)
class Strategy:
    name: str
    summary: str
    build: Callable[[TrainContext], Trainer]
    check: Check  # the strategy's torch-free rule (bench.training.rules), raises ValueError


STRATEGIES: Registry[Strategy] = Registry("strategy")


def strategy(name: str) -> Callable[[Callable[[TrainContext], Trainer]], Callable[[TrainContext], Trainer]]:
    """Register a trainer factory as strategy ``name``; its docstring's first line is the
    summary. Its ``check(spec, model, world)`` is the rule of that name in
    :mod:`bench.training.rules` (where scenarios learn the strategy names, without torch)."""
    if name not in RULES:
        raise ValueError(f"strategy {name!r} has no rule in bench.training.rules: add one there "
                         f"(scenarios take strategy names from it)")
    check = RULES.get(name).check

    def deco(fn: Callable[[TrainContext], Trainer]) -> Callable[[TrainContext], Trainer]:
        summary = (fn.__doc__ or name).strip().splitlines()[0]
        STRATEGIES.add(name, Strategy(name, summary, fn, check))
        return fn

    return deco


def loss_step(model: nn.Module, spec: ModelSpec, batch: Batch, device: torch.device,
              opt: torch.optim.Optimizer, amp: Amp | None = None) -> float:
    """forward, loss, backward, optimiser step on ``batch``; the (unscaled) loss as a float.
    ``amp``: the loss in fp32 and scaled, the gradients unscaled before the step."""
    opt.zero_grad(set_to_none=True)
    out, target = model(batch.inputs.to(device)), batch.targets.to(device)
    loss = amp.loss(spec.loss, out, target) if amp else spec.loss(out, target)
    loss.backward()
    if amp:
        amp.unscale(p for g in opt.param_groups for p in g["params"])
    opt.step()
    return float(loss.detach()) / (amp.scale if amp else 1.0)
