"""Analytic per-rank memory of each strategy, from parameter shapes alone (meta device).

Model states follow the ZeRO paper's accounting: parameters, gradients and optimizer state,
``K`` bytes of optimizer state per parameter. Two precisions: ``mixed`` (fp16/bf16 params and
grads, K = 12: fp32 master weights, Adam m and v; what ``commbench memory`` reports) and
``fp32`` (what the CPU tests train: 4 + 4 bytes, K = 8 plus Adam's 4-byte ``step`` per tensor),
which matches the bytes measured on the small models exactly.

Sharding rules (per parameter, exactly as torch shards it):
- ddp: everything replicated. zero1: optimizer state of the parameters ZeroRedundancyOptimizer
  assigns to the rank (largest first, each to the least-loaded rank).
- zero2 / zero3 (FSDP2): dim-0 chunks of ceil(d0 / N) rows, so a rank holds
  ``clamp(d0 - r * ceil(d0 / N), 0, ceil(d0 / N))`` rows of params, grads and state.
- tensor: colwise weights and biases split on dim 0, rowwise weights on dim 1, the rest replicated.
- pipeline: the parameters of the rank's stages only. hybrid: tensor split, then FSDP2 over dp.

Activations (GPT only; Korthikanti et al. 2022, 16-bit, no recomputation, no sequence
parallelism): per layer ``s*b*h*(10 + 24/t + 5*a*s/(h*t))`` bytes with tensor degree t, where
the ``5as/h`` attention-score term is dropped with flash attention (the default here), plus the
fp32 logits ``4*s*b*V``. Pipelines hold L/p layers for m (GPipe) or min(m, p) (1F1B) microbatches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bench.models.base import ModelSpec
from bench.training.scenario import StrategySpec
from kernels.registry import Registry


@dataclass(frozen=True)
class Precision:
    name: str
    param_bytes: int
    grad_bytes: int
    optim_per_param: int  # K
    optim_per_tensor: int  # Adam's step scalar (fp32 torch.optim.Adam), 0 in the ZeRO paper


FP32 = Precision("fp32", 4, 4, 8, 4)
MIXED = Precision("mixed", 2, 2, 12, 0)
PRECISIONS = {p.name: p for p in (FP32, MIXED)}


@dataclass(frozen=True)
class Param:
    name: str
    shape: tuple[int, ...]
    piece: int


@dataclass(frozen=True)
class Held:
    """Local element counts of one rank: params, grads, optimizer-state owners."""

    params: list[int]
    grads: list[int]
    optim: list[int]  # local numel of each parameter the rank keeps optimizer state for
    transient: int = 0  # elements of unsharded parameters held during compute (FSDP)


@dataclass(frozen=True)
class Estimate:
    params: int
    grads: int
    optim: int
    transient: int
    activations: int | None

    @property
    def model_states(self) -> int:
        return self.params + self.grads + self.optim

    @property
    def total(self) -> int:
        return self.model_states + self.transient + (self.activations or 0)


def parameters(model: ModelSpec) -> list[Param]:
    meta = model.build_meta()
    return [Param(n, tuple(p.shape), int(n.split(".")[1])) for n, p in meta.named_parameters()]


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def chunk_rows(d0: int, n: int, r: int) -> int:
    """Rows of dim 0 on rank ``r`` under torch.chunk-style sharding into ``n``."""
    c = -(-d0 // n)
    return max(0, min(c, d0 - r * c))


def fsdp_local(shape: tuple[int, ...], n: int, r: int) -> int:
    return chunk_rows(shape[0], n, r) * numel(shape[1:])


def tp_local(model: ModelSpec, p: Param, t: int) -> tuple[int, ...]:
    plan = model.tp_plan() if model.tp_plan else {}
    owner, _, kind = p.name.rpartition(".")
    style = plan.get(owner)
    if style == "colwise":
        return (p.shape[0] // t, *p.shape[1:])
    if style == "rowwise" and kind == "weight":
        return (p.shape[0], p.shape[1] // t)
    return p.shape


Rule = Callable[[ModelSpec, StrategySpec, list[Param], int, int], Held]
RULES: Registry[Rule] = Registry("memory rule")


@RULES.register("ddp")
def _ddp(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    full = [numel(p.shape) for p in ps]
    return Held(full, full, full)


@RULES.register("zero1")
def _zero1(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    full = [numel(p.shape) for p in ps]
    loads = [0] * n
    mine = []
    for size in sorted(full, reverse=True):  # stable, like ZeroRedundancyOptimizer
        owner = loads.index(min(loads))
        loads[owner] += size
        if owner == r:
            mine.append(size)
    return Held(full, full, mine)


def _fsdp(ps: list[Param], n: int, r: int, shapes: list[tuple[int, ...]], reshard: bool) -> Held:
    local = [fsdp_local(sh, n, r) for sh in shapes]
    units: dict[int, int] = {}
    for p, sh in zip(ps, shapes):
        units[p.piece] = units.get(p.piece, 0) + numel(sh)
    full = sum(units.values())
    # all-gathered parameters live in buffers of their own beside the shards: zero3 holds the
    # unit in compute and the next one, prefetched; zero2 keeps every unit gathered
    transient = 2 * max(units.values()) if reshard else full
    return Held(local, local, local, transient if n > 1 else 0)


@RULES.register("zero2")
def _zero2(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    return _fsdp(ps, n, r, [p.shape for p in ps], reshard=False)


@RULES.register("zero3")
def _zero3(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    return _fsdp(ps, n, r, [p.shape for p in ps], reshard=True)


@RULES.register("tensor")
def _tensor(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    local = [numel(tp_local(model, p, n)) for p in ps]
    return Held(local, local, local)


@RULES.register("hybrid")
def _hybrid(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    t = s.tensor_degree
    return _fsdp(ps, n // t, r // t, [tp_local(model, p, t) for p in ps], reshard=True)


@RULES.register("pipeline")
def _pipeline(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    from bench.training.strategies.pipeline import local_stages, stage_pieces

    stages = stage_pieces(model, n * s.pipeline_stages_per_rank)
    mine = {i for st in local_stages(s, r, n) for i in stages[st]}
    local = [numel(p.shape) for p in ps if p.piece in mine]
    return Held(local, local, local)


def activations(model: ModelSpec, s: StrategySpec, n: int, batch: int, prec: Precision,
                flash: bool = True) -> int | None:
    """Activation bytes per rank for the reference GPT (None for other families)."""
    cfg = model.config
    if model.family != "gpt":
        return None
    sq, h, a, layers, v = cfg.seq_len, cfg.embd, cfg.heads, cfg.layers, cfg.vocab
    t = {"tensor": n, "hybrid": s.tensor_degree}.get(s.name, 1)
    mb, held_layers = batch, layers
    if s.name == "pipeline":
        p = n * s.pipeline_stages_per_rank
        mb = batch // s.microbatches
        in_flight = s.microbatches if s.schedule == "gpipe" else min(s.microbatches, n)
        held_layers = math.ceil(layers / p) * s.pipeline_stages_per_rank * in_flight
    per_layer = sq * mb * h * (10 + 24 / t + (0 if flash else 5 * a * sq / (h * t)))
    scale = prec.param_bytes / 2  # the formula counts 16-bit activations
    return int(held_layers * per_layer * scale + 4 * sq * mb * v)


def predict(model: ModelSpec, s: StrategySpec, world: int, rank: int, prec: Precision = FP32,
            batch: int | None = None, params: list[Param] | None = None) -> Estimate:
    """Per-rank memory of ``rank`` in a job of ``world`` ranks (batch: per replica)."""
    ps = params if params is not None else parameters(model)
    held = RULES.get(s.name)(model, s, ps, world, rank)
    acts = activations(model, s, world, batch, prec) if batch else None
    return Estimate(
        params=sum(held.params) * prec.param_bytes,
        grads=sum(held.grads) * prec.grad_bytes,
        optim=sum(held.optim) * prec.optim_per_param + len(held.optim) * prec.optim_per_tensor,
        transient=held.transient * prec.param_bytes,
        activations=acts,
    )
