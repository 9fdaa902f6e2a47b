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
- ps (N servers, the last N ranks; W - N workers): a worker holds every parameter and gradient
  and no optimizer state; server s holds the whole tensors :func:`greedy_owners` gives it, their
  gradients and their optimizer state. Transient: a worker's flat push and pull buffers (2 Psi),
  a server's W - N receive buffers and its flat send buffer ((W - N + 1) Psi_s).

Activations (GPT only; Korthikanti et al. 2022, no sequence parallelism): per layer
``s*b*h*(10 + 24/t + 5*a*s/(h*t))`` bytes at 16-bit with tensor degree t, where the ``5as/h``
attention-score term is dropped with flash attention (the default here), plus the fp32 logits
``4*s*b*V``. Pipelines hold L/p layers for m (GPipe) or min(m, p) (1F1B) microbatches. The
16-bit figures hold for mixed precision and for ``precision: bf16 | fp16``; fp32 activations
(fp32 accounting and ``precision: fp32``) are twice them.

Activation checkpointing (``checkpoint``; Korthikanti et al. 2022, "full recomputation"): a
checkpointed layer keeps only its input, ``2*s*b*h`` bytes at 16-bit (``4*s*b*h`` in fp32; not
divided by t: the layer input is replicated across a tensor group without sequence
parallelism), instead of the per-layer figure above; for a pipeline, the checkpointed layers
counted are those of the rank's stages. The cost is recomputation: one extra forward of the
checkpointed pieces in backward. :func:`recompute_fraction` (``Estimate.recompute_fraction``)
is that extra work as a fraction of one whole-model forward, from matmul FLOPs per sample
(``2 * tokens`` per weight of every ``nn.Linear``/``nn.Conv*``, plus ``4 * s^2 * h`` of
attention per GPT layer; convolutions counted once per sample, not per pixel, an approximation).
With backward ~ 2 forwards, a step's compute grows by the factor ``1 + recompute_fraction / 3``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
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
    recompute_fraction: float = 0.0  # extra forward work of checkpointing / one model forward

    @property
    def model_states(self) -> int:
        return self.params + self.grads + self.optim

    @property
    def total(self) -> int:
        return self.model_states + self.transient + (self.activations or 0)


def greedy_owners(sizes: list[int], n: int) -> list[int]:
    """Owner of each size among ``n`` bins: largest first (stable) to the least-loaded bin,
    lowest index on ties (ZeroRedundancyOptimizer's assignment; the ps shards)."""
    loads = [(0, b) for b in range(min(n, len(sizes)))]  # (load, bin): the heap's least is
    owners = [0] * len(sizes)                                # the least load, lowest bin on ties
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, owners[i] = heapq.heappop(loads)
        heapq.heappush(loads, (load + sizes[i], owners[i]))
    return owners


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


def tp_plan_of(model: ModelSpec) -> dict[str, str]:
    """The model's tensor-parallel plan (module path -> style), built once per call: pass it to
    :func:`tp_local` for every parameter (building it per parameter is quadratic in layers)."""
    return model.tp_plan() if model.tp_plan else {}


def tp_local(plan: Mapping[str, str], p: Param, t: int) -> tuple[int, ...]:
    """Local shape of ``p`` on a rank of a tensor group of ``t`` under ``plan``
    (:func:`tp_plan_of`)."""
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
    return Held(full, full, [x for x, o in zip(full, greedy_owners(full, n)) if o == r])


@RULES.register("ps")
def _ps(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    full = [numel(p.shape) for p in ps]
    workers = n - s.servers
    if r < workers:
        return Held(full, full, [], 2 * sum(full))
    mine = [x for x, o in zip(full, greedy_owners(full, s.servers)) if o == r - workers]
    return Held(mine, mine, mine, (workers + 1) * sum(mine))


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
    plan = tp_plan_of(model)
    local = [numel(tp_local(plan, p, n)) for p in ps]
    return Held(local, local, local)


@RULES.register("hybrid")
def _hybrid(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    t = s.tensor_degree
    plan = tp_plan_of(model)
    return _fsdp(ps, n // t, r // t, [tp_local(plan, p, t) for p in ps], reshard=True)


@RULES.register("pipeline")
def _pipeline(model: ModelSpec, s: StrategySpec, ps: list[Param], n: int, r: int) -> Held:
    from bench.training.stages import local_stages, stage_pieces

    stages = stage_pieces(model, n * s.pipeline_stages_per_rank)
    mine = {i for st in local_stages(s, r, n) for i in stages[st]}
    local = [numel(p.shape) for p in ps if p.piece in mine]
    return Held(local, local, local)


def activations(model: ModelSpec, s: StrategySpec, n: int, batch: int, prec: Precision,
                flash: bool = True, rank: int = 0) -> int | None:
    """Activation bytes of ``rank`` for the reference GPT (None for other families)."""
    cfg = model.config
    if model.family != "gpt":
        return None
    if s.name == "ps" and rank >= n - s.servers:
        return 0  # a server runs no forward
    sq, h, a, layers, v = cfg.seq_len, cfg.embd, cfg.heads, cfg.layers, cfg.vocab
    t = {"tensor": n, "hybrid": s.tensor_degree}.get(s.name, 1)
    blocks = set(range(1, layers + 1))  # pieces: embedding, the L layers, the head
    mb, per_mb, in_flight = batch, layers, 1
    if s.name == "pipeline":
        from bench.training.stages import local_stages, stage_pieces

        p = n * s.pipeline_stages_per_rank
        mb = batch // s.microbatches
        in_flight = s.microbatches if s.schedule == "gpipe" else min(s.microbatches, n)
        per_mb = math.ceil(layers / p) * s.pipeline_stages_per_rank
        stages = stage_pieces(model, p)
        blocks &= {i for st in local_stages(s, rank, n) for i in stages[st]}
    ckpt = min(len(blocks & s.checkpointed(model.num_pieces)), per_mb)
    per_layer = sq * mb * h * (10 + 24 / t + (0 if flash else 5 * a * sq / (h * t)))
    kept_input = 2 * sq * mb * h  # a checkpointed layer's input, 16-bit
    scale = 1 if prec.param_bytes == 2 or s.precision != "fp32" else 2  # vs 16-bit figures
    held = ((per_mb - ckpt) * per_layer + ckpt * kept_input) * in_flight
    return int(held * scale + 4 * sq * mb * v)


def piece_flops(model: ModelSpec) -> list[int]:
    """Forward matmul FLOPs per sample of each piece (see the module docstring)."""
    from torch import nn

    cfg = model.config
    tokens = cfg.seq_len if model.family == "gpt" else 1
    out = []
    for i, piece in enumerate(model.build_meta().pieces):
        w = sum(m.weight.numel() for m in piece.modules()
                if isinstance(m, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d))
        attn = 4 * cfg.seq_len ** 2 * cfg.embd if model.family == "gpt" and 1 <= i <= cfg.layers else 0
        out.append(2 * tokens * w + attn)
    return out


def recompute_fraction(model: ModelSpec, s: StrategySpec) -> float:
    """Extra forward work of ``s``'s checkpointing, as a fraction of one forward of the model."""
    chosen = s.checkpointed(model.num_pieces)
    if not chosen:
        return 0.0
    flops = piece_flops(model)
    return sum(flops[i] for i in chosen) / sum(flops)


def predict(model: ModelSpec, s: StrategySpec, world: int, rank: int, prec: Precision = FP32,
            batch: int | None = None, params: list[Param] | None = None) -> Estimate:
    """Per-rank memory of ``rank`` in a job of ``world`` ranks (batch: per replica)."""
    ps = params if params is not None else parameters(model)
    held = RULES.get(s.name)(model, s, ps, world, rank)
    acts = activations(model, s, world, batch, prec, rank=rank) if batch else None
    return Estimate(
        params=sum(held.params) * prec.param_bytes,
        grads=sum(held.grads) * prec.grad_bytes,
        optim=sum(held.optim) * prec.optim_per_param + len(held.optim) * prec.optim_per_tensor,
        transient=held.transient * prec.param_bytes,
        activations=acts,
        recompute_fraction=recompute_fraction(model, s),
    )
