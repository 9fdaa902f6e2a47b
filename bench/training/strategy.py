"""What a training strategy is: one file under :mod:`bench.training.strategies` (or under a
package named in ``COMMBENCH_PLUGINS``) that calls :func:`register` with a :class:`Strategy`
stating its options, build, check, memory (``held``, ``acts``), communication (``calls``) and
advise layouts: docs/training.md (Adding a strategy: one file). Nothing here or at the top of a
strategy file imports torch. Strategies never time themselves nor count bytes
(:mod:`bench.training.measure`, :mod:`~bench.training.comm` and :mod:`~bench.training.memory` do)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.training.analytic import Acts
from kernels.registry import Registry

if TYPE_CHECKING:
    import torch
    from torch import nn

    from bench.models.base import Batch, Chain, ModelSpec
    from bench.models.catalog import ModelInfo
    from bench.training.analytic import Held, Param, Precision
    from bench.training.options import Amp

# bench.training.scenario.StrategySpec, named and not imported: the scenario imports this
# module, so importing it back (even for type checking) would make them import each other.
StrategySpec = Any
PACKAGE = "bench.training.strategies"

# What a strategy states for advise is in advise's types, named here and not imported: advise
# reads this registry, so importing them (even for type checking) would make the two packages
# import each other. Call: bench.advise.calls.Call; CommContext: bench.advise.comm; Job:
# bench.advise.evaluate; Layout: bench.advise.layout; Memory: bench.advise.memory; Space:
# bench.advise.space; Shape: bench.advise.shape; Priced: bench.advise.step.
Call = CommContext = Job = Layout = Memory = Space = Shape = Priced = Any


@dataclass(frozen=True)
class NoOptions:
    """The options of a strategy that takes none of its own."""


@dataclass(frozen=True)
class Strategy:
    name: str
    summary: str
    build: Callable[[TrainContext], Trainer]
    held: Callable[[ModelSpec, Any, list[Param], int, int], Held]  # (model, opts, params, world, rank)
    calls: Callable[[CommContext], list[Call]]
    layout: Callable[[Any, int], Layout]  # (opts, world) -> the strategy as an advise layout
    options: type = NoOptions
    short: str | None = None  # the option that ``name:value`` sets
    label: Callable[[Any], str] = lambda opts: ""  # the options a record's label names
    check: Callable[[Any, ModelInfo, int, int], None] = lambda opts, model, world, batch: None
    acts: Callable[[ModelSpec, Any, int, int], Acts] = lambda model, opts, world, rank: Acts()
    layouts: Callable[[Space], Iterable[tuple[Layout, int]]] = lambda space: ()  # for search
    layout_label: Callable[[Layout], list[str]] = lambda lay: []  # a data strategy's [options]
    # a data strategy whose ranks are not all alike (ps): its ranks' memory and its priced calls
    states: Callable[[Shape, Layout, int, Precision], tuple[Memory, ...]] | None = None
    price: Callable[[Job, CommContext], list[Priced]] | None = None
    zero: int = 0  # the ZeRO stage an advise record names
    order: int = 100  # where it lists among the others (tables, valid names)
    table: str | None = None  # its spelling in ``commbench memory``'s default table (None: left out)
    needs_shape: bool = False  # its memory needs the model's layers (not a flat parameter count)

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.options))


STRATEGIES: Registry[Strategy] = Registry("strategy", packages=(PACKAGE,),
                                          order=lambda s: (s.order, s.name))


def register(*items: Strategy) -> None:
    """Called at the bottom of each strategy file (a file may hold a family: zero2 and zero3)."""
    for s in items:
        STRATEGIES.add(s.name, s)


def strategies() -> Registry[Strategy]:
    """Every strategy (see :data:`STRATEGIES`)."""
    return STRATEGIES


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

    @property
    def opts(self) -> Any:
        """The strategy's own options."""
        return self.spec.options

    def build_model(self) -> Chain:
        """The full model, identically initialised on every rank and in the reference, with the
        strategy's checkpointing and precision applied to its pieces (:mod:`.options`)."""
        import torch

        from bench.training.options import apply_options

        torch.manual_seed(self.seed)
        model = self.model.build()
        return apply_options(model, self.spec.checkpointed(len(model.pieces)), self.amp)

    @property
    def amp(self) -> Amp:
        from bench.training.options import Amp

        return Amp.of(self.spec.precision, self.device)

    def optimizer(self, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        import torch

        return torch.optim.Adam(params, lr=self.lr, foreach=False)


class Trainer:
    """One strategy bound to a model on this rank.

    ``dp_degree`` is how many data-parallel replicas split the global batch; ``replica`` is this
    rank's replica index. ``step`` returns this rank's loss for its replica's share, or None on
    ranks that never see the loss (pipeline stages before the last). ``held`` and ``opt``: the
    module and the optimiser whose parameters, gradients and state this rank holds, unless
    ``modules`` and ``optimizers`` say otherwise.
    """

    dp_degree: int = 1
    replica: int = 0
    held: nn.Module
    opt: torch.optim.Optimizer

    def step(self, batch: Batch) -> float | None:
        raise NotImplementedError

    def local_share(self, batch: Batch) -> Batch:
        n = batch.inputs.shape[0] // self.dp_degree
        return batch.slice(self.replica * n, (self.replica + 1) * n)

    def modules(self) -> list[nn.Module]:
        """Modules whose parameters (and their ``.grad``) this rank holds."""
        return [self.held]

    def optimizers(self) -> list[torch.optim.Optimizer]:
        """Optimisers whose ``state`` this rank holds (local shards only)."""
        return [self.opt]

    def close(self) -> None:
        """Release process groups or hooks the strategy made."""
