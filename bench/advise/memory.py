"""Per-rank memory of a layout: :mod:`bench.training.analytic`'s rules on the rank's stages and
tensor shards, the data strategy's ``held`` over the data group, and Korthikanti et al.'s
activations of each pipeline rank at its own peak. docs/advise.md (Memory).
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
from bench.training.analytic import Estimate, Precision, numel, predict
from bench.training.scenario import StrategySpec
from bench.training.stages import local_stages, peak_held, stage_layers, stage_starts
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
# Of those, what dropout holds (Section 4.1): the two residual branches' byte masks (1 + 1 of the
# 10), and of the scores' 5 the attention dropout's mask (1) and output (2): without dropout the
# softmax's output (2) is itself what multiplies the values.
DROPOUT_MASKS_PER_SBH, DROPOUT_PER_ASSB = 2, 3
LOGITS_BYTES = 4  # the LM head's fp32 logits, per token and vocabulary entry
OUTPUT_PER_SBH = 2  # a pipeline stage's 16-bit output, per token and hidden unit


def layer_activation_bytes(seq: int, micro: int, hidden: int, heads: int, tensor: int,
                           software: Software, recompute: str, context: int = 1) -> float:
    """16-bit bytes one transformer layer holds for backward on one tensor rank, for a
    micro-batch of ``micro`` sequences, on the rank's context chunk. Under sequence parallelism a
    fully recomputed layer's input is the rank's s/t shard (Megatron-LM,
    megatron/model/transformer.py: ``distribute_saved_activations ... and not sequence_parallel``)."""
    sbh = seq // context * micro * hidden
    sp = tensor if software.sequence_parallel else 1
    if recompute == "full":
        return INPUT_PER_SBH * sbh / sp
    replicated = REPLICATED_PER_SBH - (0 if software.dropout else DROPOUT_MASKS_PER_SBH)
    base = replicated / sp + SHARDED_PER_SBH / tensor
    scores = SCORES_PER_ASSB - (0 if software.dropout else DROPOUT_PER_ASSB)
    held = 0.0 if software.flash or recompute == "selective" else \
        scores * heads * seq / (hidden * tensor)
    return sbh * (base + held)


def gathered_kv_bytes(shape: Shape, lay: Layout, micro: int) -> int:
    """16-bit bytes one layer holds of the other context ranks' keys and values, gathered in the
    forward and read by the attention's backward; none under full recomputation (the recomputed
    forward gathers them again)."""
    if lay.context == 1 or lay.recompute == "full":
        return 0
    seq = shape.tokens_per_sample
    return 2 * micro * (seq - seq // lay.context) * shape.kv_elements(lay.tensor)


def stage_output_bytes(shape: Shape, lay: Layout, micro: int, prec: Precision) -> int:
    """Bytes of one stage forward's output as a pipeline keeps it until its backward (none where
    the software deallocates it): not one of Korthikanti et al.'s per-layer bytes, as the stage's
    last layer's output is the next layer's input only on the next stage."""
    cfg = shape.model.config
    sw = shape.software
    if lay.pipeline == 1 or sw.deallocates_outputs or not isinstance(cfg, GPTConfig):
        return 0
    sp = lay.tensor if sw.sequence_parallel else 1
    return OUTPUT_PER_SBH * cfg.seq_len // lay.context * micro * cfg.embd * prec.act_scale(lay.amp) // sp


def stage_activations(shape: Shape, lay: Layout, batch: int, prec: Precision,
                      pp: int) -> int | None:
    """Activation bytes of pipeline index ``pp`` at its peak, its stages' forwards held and freed
    in the schedule's order (:func:`bench.training.stages.peak_held`); None for a model without
    a sequence."""
    cfg = shape.model.config
    if not isinstance(cfg, GPTConfig):
        return None
    sw, micro = shape.software, batch // lay.microbatches
    layer = layer_activation_bytes(cfg.seq_len, micro, cfg.embd, cfg.heads, lay.tensor, sw,
                                   lay.recompute, lay.context) + gathered_kv_bytes(shape, lay, micro)
    scale = prec.act_scale(lay.amp)
    vocab = -(-cfg.vocab // lay.tensor) if sw.vocab_parallel else cfg.vocab
    seq = cfg.seq_len // lay.context  # context parallelism: the rank's chunk of each sequence
    logits = LOGITS_BYTES * seq * micro * vocab
    p, v = lay.pipeline, lay.stages_per_rank
    if p == 1:
        return int(cfg.layers * layer * scale) + logits
    mine = local_stages(v, pp, p)
    out = stage_output_bytes(shape, lay, micro, prec)
    last = lay.stages - 1  # the stage with the head: the logits, no output kept for a next stage
    weights = tuple(n * layer * scale + (logits if s == last else out) for n, s in
                    zip(stage_layers(stage_starts(shape.cut_sizes, lay.stages), mine,
                                     cfg.layers), mine))
    return int(peak_held(lay.schedule, p, lay.microbatches, v, pp, weights))


def rank_activations(shape: Shape, lay: Layout, batch: int, prec: Precision
                     ) -> dict[int, int] | None:
    """:func:`stage_activations` of each distinct kind of pipeline rank."""
    out = {pp: stage_activations(shape, lay, batch, prec, pp)
           for pp in representative_stages(shape, lay)}
    return None if None in out.values() else out  # type: ignore[return-value]


def activations(shape: Shape, lay: Layout, batch: int, prec: Precision) -> int | None:
    """The most activation bytes a rank holds (:func:`rank_activations`)."""
    per = rank_activations(shape, lay, batch, prec)
    return None if per is None else max(per.values())


def states(shape: Shape, lay: Layout, batch: int, prec: Precision) -> tuple[Memory, ...]:
    """Model states and transient buffers of the candidates for the largest rank: data index 0
    (ZeRO-1 gives it the largest tensor first), tensor index 0, each distinct kind of pipeline
    rank; a data strategy whose ranks differ says its own (``Strategy.states``)."""
    own = strategies().get(lay.dp).states
    if own is not None:
        return own(shape, lay, batch, prec)
    out = []
    for pp in representative_stages(shape, lay):
        ctx = CommContext(shape, lay, batch, pp=pp)
        e = held_states(shape, spec(lay.dp), lay.replicas, 0, lay.tensor, ctx.my_pieces, prec)
        if lay.pipeline > 1:
            e = accumulated(e, _elements(shape, lay.tensor, ctx.my_pieces), prec)
        out.append(Memory(e, pp))
    return tuple(out)


def accumulated(e: Estimate, elements: int, prec: Precision) -> Estimate:
    """``e`` with the rank's gradients (``elements``) held whole, as beside a pipeline:
    torch.distributed.pipelining (2.13, stage.py) runs every micro-batch's backward with the
    gradient sync off (``backward_maybe_with_nosync``) and reduces each stage's gradients after
    its last micro-batch (``perform_reduce_grad``)."""
    grads = max(e.grads, elements * prec.grad_bytes)
    return dataclasses.replace(e, grads=grads) if grads != e.grads else e


@functools.lru_cache(maxsize=4096)
def _elements(shape: Shape, tensor: int, pieces: frozenset[int]) -> int:
    """Tensor-parallel local elements of ``pieces``."""
    return sum(numel(p.shape) for p in local_params(shape, tensor, pieces))


@functools.lru_cache(maxsize=4096)
def held_states(shape: Shape, spec: StrategySpec, world: int, rank: int, tensor: int,
                pieces: frozenset[int], prec: Precision) -> Estimate:
    """Model states of ``rank`` of ``world`` holding ``pieces`` at their tensor-parallel local
    shapes."""
    return predict(shape.model, spec, world, rank, prec,
                   params=list(local_params(shape, tensor, pieces)))


@functools.cache
def spec(name: str, **options: int) -> StrategySpec:
    """The strategy's spec, validated once (pydantic builds a validator each time)."""
    return StrategySpec(name=name, **options)


def with_activations(held: tuple[Memory, ...], acts: dict[int, int] | None) -> Memory:
    """The largest candidate with its activations (a ps server runs no forward)."""
    out = [m if m.stage < 0 else
           Memory(Estimate(m.per_rank.params, m.per_rank.grads, m.per_rank.optim,
                           m.per_rank.transient, None if acts is None else acts[m.stage]),
                  m.stage) for m in held]
    return max(out, key=lambda m: m.total)


def layout_memory(shape: Shape, lay: Layout, batch: int, prec: Precision) -> Memory:
    return with_activations(states(shape, lay, batch, prec),
                            rank_activations(shape, lay, batch, prec))
