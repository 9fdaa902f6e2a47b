"""Per-rank memory of a layout, from :mod:`bench.training.analytic`'s rules composed: the rank's
pipeline stages, their tensor-parallel shards (``tp_local``), then the data strategy's ``held``
over the data group on exactly those parameters (a strategy whose ranks differ, ps, says its
own). Activations: Korthikanti et al.'s per-layer rule (:func:`layer_activation_bytes`) under
the shape's software and the layout's recomputation, for tensor and pipeline degrees together,
equal to :func:`bench.training.analytic.activations` wherever that applies
(``tests/advise/test_advise.py``). docs/advise.md (Memory).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from bench.advise.comm import CommContext, representative_stages
from bench.advise.layout import Layout
from bench.advise.shape import Shape, local_params
from bench.advise.software import Software
from bench.models.configs import GPTConfig
from bench.training.analytic import Acts, Estimate, Precision, numel, predict
from bench.training.scenario import StrategySpec
from bench.training.strategy import strategies


@dataclass(frozen=True)
class Memory:
    per_rank: Estimate  # the largest rank (over pipeline stages; worker or server for ps)
    stage: int  # the pipeline index of that rank (ps: -1 for a server)

    @property
    def total(self) -> int:
        return self.per_rank.total


# Korthikanti et al. 2022 (arXiv 2205.05198), Section 4: 16-bit bytes per s*b*h a transformer
# layer holds for backward: 10 (layer-norm inputs, dropout masks and the residual's: not
# sharded by tensor parallelism, divided by t under sequence parallelism) + 24 / t (the
# attention and MLP GEMMs' inputs and GeLU's) = 34 under sequence parallelism; the attention
# scores add 5 a s / (h t) unless flash attention keeps them on chip or selective recomputation
# recomputes them; full recomputation keeps the layer's input only, 2 (Table 2).
REPLICATED_PER_SBH, SHARDED_PER_SBH, SCORES_PER_ASSB, INPUT_PER_SBH = 10, 24, 5, 2
LOGITS_BYTES = 4  # the LM head's fp32 logits, per token and vocabulary entry


def layer_activation_bytes(seq: int, micro: int, hidden: int, heads: int, tensor: int,
                           software: Software, recompute: str, context: int = 1) -> float:
    """16-bit bytes one transformer layer holds for backward on one tensor rank, for a
    micro-batch of ``micro`` sequences (the constants above); with context parallelism, on the
    rank's chunk of s / ``context`` positions (its scores: those rows against all s keys)."""
    sbh = seq // context * micro * hidden
    if recompute == "full":
        return float(INPUT_PER_SBH * sbh)
    base = (REPLICATED_PER_SBH + SHARDED_PER_SBH) / tensor if software.sequence_parallel \
        else REPLICATED_PER_SBH + SHARDED_PER_SBH / tensor
    scores = 0.0 if software.flash or recompute == "selective" else \
        SCORES_PER_ASSB * heads * seq / (hidden * tensor)
    return sbh * (base + scores)


def activations(shape: Shape, lay: Layout, batch: int, prec: Precision) -> int | None:
    """The largest rank's activation bytes: its in-flight micro-batches' layers
    (:class:`bench.training.analytic.Acts`: ceil(L / stages) * v layers, 1F1B's min(m, p) or
    GPipe's m micro-batches at once) and the fp32 logits (over t under ``vocab_parallel``); 16-bit
    figures, doubled for fp32 activations. Equals
    :func:`bench.training.analytic.held_activations` under the default software."""
    cfg = shape.model.config
    if not isinstance(cfg, GPTConfig):
        return None
    plan = Acts.pipelined(cfg.layers, lay.pipeline, lay.microbatches, lay.schedule,
                          lay.stages_per_rank, tensor=lay.tensor) if lay.pipeline > 1 else \
        Acts(lay.tensor, lay.microbatches)
    sw, micro = shape.software, batch // plan.microbatches
    seq = cfg.seq_len // lay.context  # context parallelism: the rank's chunk of each sequence
    layers = cfg.layers if plan.layers is None else plan.layers
    layer = layer_activation_bytes(cfg.seq_len, micro, cfg.embd, cfg.heads, lay.tensor, sw,
                                   lay.recompute, lay.context)
    scale = 1 if prec.param_bytes == 2 or lay.amp != "fp32" else 2  # vs 16-bit figures
    vocab = -(-cfg.vocab // lay.tensor) if sw.vocab_parallel else cfg.vocab
    return int(layers * layer * plan.in_flight * scale + LOGITS_BYTES * seq * micro
               * vocab)


def states(shape: Shape, lay: Layout, batch: int, prec: Precision) -> tuple[Memory, ...]:
    """Model states and transient buffers of the candidates for the largest rank (activations
    left out): data index 0 (ZeRO-1 gives it the largest tensor first), tensor index 0, the
    largest over the pipeline indices; a data strategy whose ranks differ says its own
    (``Strategy.states``: ps, worker 0 and server 0)."""
    own = strategies().get(lay.dp).states
    if own is not None:
        return own(shape, lay, batch, prec)
    best: Memory | None = None
    for pp in representative_stages(shape, lay):
        ctx = CommContext(shape, lay, batch, pp=pp)
        e = _held(shape, lay.dp, lay.replicas, lay.tensor, ctx.my_pieces, prec)
        if lay.pipeline > 1:
            e = accumulated(e, _elements(shape, lay.tensor, ctx.my_pieces), prec)
        if best is None or e.total > best.total:
            best = Memory(e, pp)
    assert best is not None
    return (best,)


def accumulated(e: Estimate, elements: int, prec: Precision) -> Estimate:
    """``e`` with the rank's gradients held whole (``elements``: its stages' tensor-parallel
    local parameters): beside a pipeline, gradients accumulate unsharded over the micro-batches
    and are reduced once per step per stage. torch.distributed.pipelining (2.13, stage.py)
    runs every micro-batch's backward with the data strategy's gradient sync off
    (``backward_maybe_with_nosync``: DDP's ``no_sync``, FSDP's
    ``set_requires_gradient_sync(False)``) and reduces each stage's gradients after its last
    micro-batch (``perform_reduce_grad``). DDP and zero1 hold them whole anyway; zero2's
    sharded gradients exist only after that reduce_scatter."""
    grads = max(e.grads, elements * prec.grad_bytes)
    return dataclasses.replace(e, grads=grads) if grads != e.grads else e


@functools.lru_cache(maxsize=4096)
def _elements(shape: Shape, tensor: int, pieces: frozenset[int]) -> int:
    """Tensor-parallel local elements of ``pieces`` (cached as :func:`_held` is)."""
    return sum(numel(p.shape) for p in local_params(shape, tensor, pieces))


@functools.lru_cache(maxsize=4096)
def _held(shape: Shape, dp: str, data: int, tensor: int, pieces: frozenset[int],
          prec: Precision) -> Estimate:
    """Data index 0's model states holding ``pieces`` at their tensor-parallel local shapes
    (:attr:`CommContext.params`; cached: layouts that differ elsewhere share them)."""
    return predict(shape.model, _spec(dp), data, 0, prec,
                   params=list(local_params(shape, tensor, pieces)))


@functools.cache
def _spec(name: str) -> StrategySpec:
    """The strategy's spec, validated once per name (pydantic builds a validator each time)."""
    return StrategySpec(name=name)


def with_activations(held: tuple[Memory, ...], acts: int | None) -> Memory:
    """The largest candidate once activations are added (a ps server runs no forward)."""
    out = [m if m.stage < 0 else
           Memory(Estimate(m.per_rank.params, m.per_rank.grads, m.per_rank.optim,
                           m.per_rank.transient, acts), m.stage) for m in held]
    return max(out, key=lambda m: m.total)


def layout_memory(shape: Shape, lay: Layout, batch: int, prec: Precision) -> Memory:
    return with_activations(states(shape, lay, batch, prec), activations(shape, lay, batch, prec))
