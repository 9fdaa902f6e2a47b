"""Analytic per-rank memory of each strategy, from parameter shapes alone: model states by the
ZeRO paper's accounting in two precisions (``mixed``, K = 12, and ``fp32``, which equals the
bytes measured on the small models exactly), activations of the reference GPT (Korthikanti et
al. 2022, with activation checkpointing) and the recomputation checkpointing costs. The rules
and their sources: docs/training.md (Memory model). Each strategy's sharding is its ``held``;
the helpers they share are here."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.models.base import ModelSpec

# bench.training.scenario.StrategySpec, named and not imported: the scenario imports this
# module, so importing it back (even for type checking) would make them import each other.
StrategySpec = Any


@dataclass(frozen=True)
class Precision:
    name: str
    param_bytes: int
    grad_bytes: int
    optim_per_param: int  # K
    optim_per_tensor: int  # Adam's step scalar (fp32 torch.optim.Adam), 0 in the ZeRO paper

    def act_scale(self, amp: str) -> int:
        """Activation bytes over the 16-bit figures: 1 with 16-bit parameters or autocast."""
        return 1 if self.param_bytes == 2 or amp != "fp32" else 2


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
    """The model's parameters in ``named_parameters`` order: from its config's table where the
    family states one (``parameter_shapes``: no torch), else built on the meta device."""
    table = getattr(model.config, "parameter_shapes", None)
    shapes = table() if table is not None else None
    if shapes is None:
        meta = model.build_meta()
        shapes = tuple((n, tuple(p.shape)) for n, p in meta.named_parameters())
    return [Param(n, shape, int(n.split(".")[1])) for n, shape in shapes]


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def chunk_rows(d0: int, n: int, r: int) -> int:
    """Rows of dim 0 on rank ``r`` under torch.chunk-style sharding into ``n``."""
    c = -(-d0 // n)
    return max(0, min(c, d0 - r * c))


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


def fsdp_held(ps: list[Param], n: int, r: int, shapes: list[tuple[int, ...]], reshard: bool
              ) -> Held:
    """FSDP2 over ``n`` ranks on parameters of ``shapes`` (their tensor-parallel shards in a
    hybrid), one unit per piece: zero3 with ``reshard``, zero2 without."""
    local = [chunk_rows(sh[0], n, r) * numel(sh[1:]) for sh in shapes]
    units: dict[int, int] = {}
    for p, sh in zip(ps, shapes):
        units[p.piece] = units.get(p.piece, 0) + numel(sh)
    full = sum(units.values())
    # all-gathered parameters live in buffers of their own beside the shards: zero3 holds the
    # unit in compute and the next one, prefetched; zero2 keeps every unit gathered
    transient = 2 * max(units.values()) if reshard else full
    return Held(local, local, local, transient if n > 1 else 0)


def replicated(model: ModelSpec, opts: object, ps: list[Param], n: int, r: int) -> Held:
    """Every parameter, gradient and optimizer state on every rank (DDP's memory)."""
    full = [numel(p.shape) for p in ps]
    return Held(full, full, full)


@dataclass(frozen=True)
class Acts:
    """What one rank's forward holds for backward, as a strategy runs it (``Strategy.acts``)."""

    tensor: int = 1  # tensor-parallel degree of the layers
    microbatches: int = 1  # the replica's batch is cut into
    in_flight: int = 1  # microbatches whose activations are held at once
    layers: int | None = None  # layers held per microbatch (None: every layer of the model)
    pieces: frozenset[int] | None = None  # the rank's pieces (None: all)
    forward: bool = True  # False: the rank runs no forward (a parameter server)


def activations(model: ModelSpec, s: StrategySpec, n: int, batch: int, prec: Precision,
                flash: bool = True, rank: int = 0) -> int | None:
    """Activation bytes of ``rank`` for the reference GPT (None for other families), held as
    its strategy's ``acts`` says, checkpointed pieces keeping their input only."""
    if model.family != "gpt":
        return None
    plan = s.strategy.acts(model, s.options, n, rank)
    if not plan.forward:
        return 0
    checkpointed = s.checkpointed(model.num_pieces)
    cfg = model.config
    sq, h, a, layers, v = cfg.seq_len, cfg.embd, cfg.heads, cfg.layers, cfg.vocab
    t, mb = plan.tensor, batch // plan.microbatches
    per_mb = layers if plan.layers is None else plan.layers
    blocks = set(range(1, layers + 1))  # pieces: embedding, the L layers, the head
    if plan.pieces is not None:
        blocks &= plan.pieces
    ckpt = min(len(blocks & checkpointed), per_mb)
    per_layer = sq * mb * h * (10 + 24 / t + (0 if flash else 5 * a * sq / (h * t)))
    kept_input = 2 * sq * mb * h  # a checkpointed layer's input, 16-bit
    scale = prec.act_scale(s.precision)
    # the LM head's fp32 logits, held for the loss's backward by the rank that holds the head
    # (the last piece), for each micro-batch in flight there (one unless a pipeline's)
    logits = 4 * sq * mb * v if plan.pieces is None or layers + 1 in plan.pieces else 0
    held = ((per_mb - ckpt) * per_layer + ckpt * kept_input) * plan.in_flight
    return int(held * scale + logits * plan.in_flight)


def piece_flops(model: ModelSpec) -> list[int]:
    """Forward matmul FLOPs per sample of each piece (docs/training.md, Memory model)."""
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
    held = s.strategy.held(model, s.options, ps, world, rank)
    acts = activations(model, s, world, batch, prec, rank=rank) if batch else None
    return Estimate(
        params=sum(held.params) * prec.param_bytes,
        grads=sum(held.grads) * prec.grad_bytes,
        optim=sum(held.optim) * prec.optim_per_param + len(held.optim) * prec.optim_per_tensor,
        transient=held.transient * prec.param_bytes,
        activations=acts,
        recompute_fraction=recompute_fraction(model, s),
    )
