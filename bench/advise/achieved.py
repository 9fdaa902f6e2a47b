"""Compute as achieved, not at peak: each operation of a rank's pieces, per micro-batch, on a
roofline with a fixed time per kernel (:class:`Efficiency`, from the profile's
``device.gemm_efficiency``, ``gemm_latency_s`` and memory bandwidth; ``commbench gemm``
measures them); backward twice forward for every term. The rule term by term: docs/advise.md
(Compute).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from bench.advise.comm import CommContext
from bench.advise.shape import Shape, local_params
from bench.advise.software import ACCUMULATE_PASSES, DEFAULT, ELEMENTWISE, FP32_LOSS_BYTES, PACK_PASSES
from bench.advise.tiles import Tiles
from bench.argtypes import CommbenchError
from bench.models.configs import GPTConfig

ELEMENT_BYTES = 2  # activations are 16-bit where the device has tensor-core peaks
# Materialized attention per s x s score matrix, forward: scale-mask-softmax (read, write: 2),
# dropout (read, write, a byte mask: 2.5). Counted, not fitted.
SCORES_ELEMENTWISE = 4.5
BACKWARD_TIMES = 2  # backward is twice forward for every term (the FLOP count's 2/3)
ADAM_STATE_BYTES = 24  # fp32 master weights, m and v, each read and written


@dataclass(frozen=True)
class Efficiency:
    peak: float  # device.flops_per_s (FLOP/s)
    gemm: float  # device.gemm_efficiency: large-GEMM throughput / peak, in (0, 1]
    latency: float  # device.gemm_latency_s: a kernel's fixed time (s)
    bandwidth: float  # device.memory_bandwidth_bytes_per_s
    attention: str = DEFAULT.attention  # device.attention
    memory: float = 1.0  # device.memory_efficiency: achieved / nominal bandwidth, in (0, 1]
    tiles: Tiles | None = None  # device.sm_count and gemm_tiles: tile and wave quantization

    def __post_init__(self) -> None:
        if not 0 < self.gemm <= 1:
            raise CommbenchError(f"device.gemm_efficiency must be in (0, 1], got {self.gemm}")
        if not 0 < self.memory <= 1:
            raise CommbenchError(f"device.memory_efficiency must be in (0, 1], got {self.memory}")

    def gemm_s(self, flops: float, nbytes: float) -> float:
        """One GEMM (or one batched GEMM call): the roofline plus the fixed time."""
        return max(flops / (self.gemm * self.peak), self.memory_s(nbytes)) + self.latency

    def gemm_time(self, g: Gemm) -> float:
        """One GEMM call: with the device's tiles, its tiles and waves (:mod:`bench.advise.tiles`)
        against its bytes, plus the fixed time; else :meth:`gemm_s`."""
        if self.tiles is None:
            return self.gemm_s(g.flops, g.nbytes(self.attention))
        t = self.tiles.seconds(g.m, g.n, g.k, g.batch, self.gemm * self.peak / self.tiles.sms)
        return max(t, self.memory_s(g.nbytes(self.attention))) + self.latency

    def efficiency(self, g: Gemm) -> float:
        """Achieved throughput / peak of one GEMM call, in (0, gemm]."""
        return g.flops / self.peak / self.gemm_time(g)

    def memory_s(self, nbytes: float) -> float:
        return nbytes / (self.memory * self.bandwidth)


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    batch: int = 1  # GEMMs of this shape in one batched call
    scores: bool = False  # attention's: the s x s scores are its output or its input

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.batch

    def nbytes(self, attention: str) -> float:
        if self.scores and attention == "flash":  # scores stay on chip: Q, K / V and O pass
            return float(ELEMENT_BYTES * self.batch * 2 * min(self.m, self.n) * min(self.k,
                                                                                   self.n))
        # both operands and the output, each read or written once
        return float(ELEMENT_BYTES * (self.m * self.k + self.k * self.n + self.m * self.n)) \
            * self.batch


def block_gemms(shape: Shape, tensor: int, piece: int, micro: int, context: int = 1
                ) -> list[Gemm]:
    """The GEMMs of one forward of ``piece`` on ``micro`` samples (of the rank's context chunk):
    its Linears at their local shapes, then a GPT block's score and context GEMMs batched over
    the samples and local heads. What ``commbench gemm`` times."""
    tokens = micro * (shape.tokens_per_sample // context)
    out = []
    for p in local_params(shape, tensor, frozenset((piece,))):
        if len(p.shape) == 2 and not p.name.endswith(("wte.weight", "wpe.weight")):
            n_out, n_in = p.shape
            out.append(Gemm(tokens, n_out, n_in))
    cfg = shape.model.config
    if isinstance(cfg, GPTConfig) and 1 <= piece <= cfg.layers:
        s, d = cfg.seq_len, cfg.embd // cfg.heads
        heads = max(1, cfg.heads // tensor) * micro
        q = s // context  # the rank's queries
        out += [Gemm(q, s, d, heads, True), Gemm(q, d, s, heads, True)]  # Q K^T; scores V
    return out


@functools.lru_cache(maxsize=65536)
def piece_forward_s(eff: Efficiency, shape: Shape, tensor: int, piece: int, micro: int,
                    context: int = 1) -> float:
    """One forward of ``piece`` on a micro-batch of ``micro`` samples, on a context chunk of
    1 / ``context`` of each sequence (docs/advise.md, Compute)."""
    t = sum(eff.gemm_time(g) for g in block_gemms(shape, tensor, piece, micro, context)
            if not g.scores)
    cfg = shape.model.config
    if isinstance(cfg, GPTConfig) and 1 <= piece <= cfg.layers:
        h, seq = cfg.embd, cfg.seq_len // context
        rep, shard = ELEMENTWISE[shape.software.elementwise]
        if shape.software.sequence_parallel:  # layer norms and dropouts on s / t of the tokens
            rep /= tensor
        t += eff.memory_s(ELEMENT_BYTES * micro * seq * (rep * h + shard * h / tensor))
    return t + core_forward_s(eff, shape, tensor, piece, micro, context)


@functools.lru_cache(maxsize=65536)
def local_logits(shape: Shape, tensor: int, piece: int) -> int:
    """Logits per token the piece's LM head computes on one tensor rank (its local vocabulary
    rows; 0 for a piece without the head)."""
    return sum(p.shape[0] for p in local_params(shape, tensor, frozenset((piece,)))
               if p.name.endswith("lm_head.weight"))


@functools.lru_cache(maxsize=65536)
def loss_s(eff: Efficiency, shape: Shape, tensor: int, pieces: frozenset[int],
           micro: int, context: int = 1) -> float:
    """The fp32 loss's element-wise passes on one micro-batch, forward and backward, on the rank
    holding the LM head; 0 unless the software's ``fp32_loss``."""
    if not shape.software.fp32_loss:
        return 0.0
    logits = sum(local_logits(shape, tensor, i) for i in pieces)
    return eff.memory_s(FP32_LOSS_BYTES * micro * (shape.tokens_per_sample // context) * logits)


@functools.lru_cache(maxsize=65536)
def core_forward_s(eff: Efficiency, shape: Shape, tensor: int, piece: int, micro: int,
                   context: int = 1) -> float:
    """One forward of the attention core of ``piece`` (a GPT block; else 0): what selective
    recomputation runs again (Korthikanti et al. 2022, Section 5)."""
    t = sum(eff.gemm_time(g) for g in block_gemms(shape, tensor, piece, micro, context)
            if g.scores)
    cfg = shape.model.config
    if eff.attention == "materialized" and isinstance(cfg, GPTConfig) and \
            1 <= piece <= cfg.layers:
        heads = max(1, cfg.heads // tensor) * micro
        t += eff.memory_s(ELEMENT_BYTES * SCORES_ELEMENTWISE * heads * (cfg.seq_len // context)
                          * cfg.seq_len)
    return t


@functools.lru_cache(maxsize=65536)
def stage_s(piece_s: Callable[..., float], eff: Efficiency, shape: Shape, tensor: int,
            pieces: frozenset[int], micro: int, context: int = 1) -> float:
    """``piece_s`` (:func:`piece_forward_s`, :func:`core_forward_s`) of a rank's pieces on one
    micro-batch (its context chunk)."""
    kind = shape.piece_kind  # a piece's kind prices as the piece (Shape.piece_kind)
    return sum(piece_s(eff, shape, tensor, kind[i], micro, context) for i in pieces)


@functools.lru_cache(maxsize=65536)
def held_params(shape: Shape, tensor: int, pieces: frozenset[int]) -> int:
    """Parameters of ``pieces`` on one tensor-parallel rank."""
    kind = shape.piece_kind
    return sum(piece_params(shape, tensor, kind[i]) for i in pieces)


@functools.lru_cache(maxsize=65536)
def piece_params(shape: Shape, tensor: int, piece: int) -> int:
    """Parameters of one piece on one tensor-parallel rank."""
    return sum(math.prod(p.shape) for p in local_params(shape, tensor, frozenset((piece,))))


def accumulation_s(eff: Efficiency, ctx: CommContext) -> float:
    """The software's ``autograd_accumulation`` over the rank's local parameters (0 without it)."""
    lay = ctx.layout
    if not ctx.shape.software.autograd_accumulation:
        return 0.0
    passes = ACCUMULATE_PASSES * (lay.microbatches - 1) + (PACK_PASSES if lay.replicas > 1
                                                           else 0)
    return eff.memory_s(passes * ctx.bytes.grad * held_params(ctx.shape, lay.tensor,
                                                             ctx.my_pieces))


@dataclass(frozen=True)
class Achieved:
    eff: Efficiency
    flops_16bit_per_s: float | None = None  # as Flops: 16-bit work where stated

    def speed(self, sixteen: bool) -> float:
        return self.eff.peak / self.flops_16bit_per_s if sixteen and self.flops_16bit_per_s \
            else 1.0

    def seconds(self, ctx: CommContext) -> float:
        lay = ctx.layout
        micro = max(1, ctx.batch // lay.microbatches)
        c = lay.context
        fwd = stage_s(piece_forward_s, self.eff, ctx.shape, lay.tensor, ctx.my_pieces, micro, c)
        again = stage_s(core_forward_s, self.eff, ctx.shape, lay.tensor, ctx.my_pieces, micro, c) \
            if lay.selective else 0.0  # selective recomputation: the cores' forward again
        loss = loss_s(self.eff, ctx.shape, lay.tensor, ctx.my_pieces, micro, c)
        return ((1 + BACKWARD_TIMES) * fwd + again + loss) * lay.microbatches

    def recomputed(self, ctx: CommContext) -> float:
        """What full recomputation adds: one more forward of the rank's transformer layers (the
        software checkpoints the layers; the embedding, the head and the loss are not rerun:
        Megatron-LM's ``checkpointed_forward`` wraps the layers only)."""
        lay = ctx.layout
        layers = getattr(ctx.shape.model.config, "layers", 0)
        blocks = frozenset(i for i in ctx.my_pieces if 1 <= i <= layers) \
            if isinstance(ctx.shape.model.config, GPTConfig) else ctx.my_pieces
        micro = max(1, ctx.batch // lay.microbatches)
        return stage_s(piece_forward_s, self.eff, ctx.shape, lay.tensor, blocks, micro,
                       lay.context) * lay.microbatches

    def optimizer(self, ctx: CommContext) -> float:
        """Adam on the parameters this rank updates, at memory bandwidth, and
        :func:`accumulation_s`; a ps worker updates nothing (its server does)."""
        lay = ctx.layout
        if lay.servers:
            return 0.0
        n = held_params(ctx.shape, lay.tensor, ctx.my_pieces) / (lay.replicas if lay.zero
                                                                  else 1)
        per = ADAM_STATE_BYTES + ctx.bytes.grad + (2 if ctx.bytes.param == 2 else 0)
        return self.eff.memory_s(n * per) + accumulation_s(self.eff, ctx)

    @property
    def describe(self) -> str:
        e = self.eff
        return (f"achieved: GEMMs at {e.gemm:.3g} x device.flops_per_s ({e.peak:.3g}) + "
                f"{e.latency * 1e6:.3g} us each, memory-bound work at {e.memory:.3g} x "
                f"{e.bandwidth:.3g} B/s, "
                f"{e.attention} attention")
