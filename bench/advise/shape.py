"""What a model is to the advice: its parameters by piece, FLOPs per piece (docs/advise.md,
Compute), the activation between two pieces, its routing (a mixture of experts), the training
software it runs under and its key/value heads; from a named model or a stated shape.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.advise.flags import VOCAB
from bench.advise.routing import Routing
from bench.advise.software import DEFAULT, Software
from bench.argtypes import CommbenchError
from bench.models.configs import GPTConfig, MoEConfig, TPLinear
from bench.training.analytic import Param, parameters, tp_local, tp_plan_of

if TYPE_CHECKING:
    from bench.models.base import ModelSpec


UNIFORM = Routing()
VOCAB_MATRICES = ("wte.weight", "lm_head.weight")  # the vocabulary x width matrices of a GPT


@dataclass(frozen=True, eq=False)  # hashed by identity: one per model (shape_of caches it)
class Shape:
    model: ModelSpec
    params: tuple[Param, ...]
    routing: Routing = UNIFORM  # a mixture of experts: how its router spreads tokens
    software: Software = DEFAULT  # what the training software shards and keeps
    kv_heads: int | None = None  # grouped-query attention's key/value heads (None: the heads)

    def __post_init__(self) -> None:
        heads = getattr(self.model.config, "heads", 0)
        if self.kv_heads is not None and (self.kv_heads < 1 or not heads or heads % self.kv_heads):
            raise CommbenchError(f"key/value heads {self.kv_heads} must divide the {heads} heads")

    def under(self, software: Software) -> Shape:
        """The same model under other software (a new shape: caches keyed by it start empty)."""
        return self if software == self.software else dataclasses.replace(self, software=software)

    @property
    def name(self) -> str:
        return self.model.name

    @functools.cached_property
    def total(self) -> int:
        return sum(math.prod(p.shape) for p in self.params)

    @functools.cached_property
    def piece_sizes(self) -> tuple[int, ...]:
        """Parameters per piece (what the pipeline balances its stages by)."""
        out = [0] * self.model.num_pieces
        for p in self.params:
            out[p.piece] += math.prod(p.shape)
        return tuple(out)

    @functools.cached_property
    def cut_sizes(self) -> tuple[int, ...]:
        """What the software's pipeline balances its stages by, per piece
        (``Software.pipeline_balance``): the parameters, or for a GPT a slot per layer (the
        embedding's and the head's pieces weigh 1 against a layer's ``pieces`` under
        ``layers``: they go with the first and last layers; a slot each under
        ``layers+embeddings``)."""
        balance = self.software.pipeline_balance
        layers = getattr(self.model.config, "layers", 0)
        if balance == "parameters" or not isinstance(self.model.config, GPTConfig):
            return self.piece_sizes
        n = self.model.num_pieces
        slot = n if balance == "layers" else 1
        return tuple(slot if 1 <= i <= layers else 1 for i in range(n))

    @functools.cached_property
    def piece_kind(self) -> tuple[int, ...]:
        """Each piece's first piece of its kind (the same parameters, tensor-parallel styles,
        FLOPs and blockness): what is priced per piece is priced once per kind."""
        layers = getattr(self.model.config, "layers", 0)
        sigs: list[list[object]] = [[1 <= i <= layers, self.piece_flops[i]]
                                    for i in range(self.model.num_pieces)]
        for p in self.params:
            sigs[p.piece].append((p.name.removeprefix(f"pieces.{p.piece}."), p.shape,
                                  self.plan.get(p.name.rpartition(".")[0])))
        first: dict[tuple[object, ...], int] = {}
        return tuple(first.setdefault(tuple(sig), i) for i, sig in enumerate(sigs))

    @functools.cached_property
    def plan(self) -> dict[str, str]:
        """The model's tensor-parallel plan, built once (:func:`tp_local` reads it)."""
        return tp_plan_of(self.model)

    @functools.cached_property
    def linears(self) -> tuple[tuple[int, TPLinear], ...]:
        """(piece, Linear) of every layer the tensor-parallel plan shards, as the software runs them."""
        plan = self.software.tp_linears(self.model.config.tp_linears() or {})
        return tuple((int(path.split(".")[1]), lin) for path, lin in plan.items())

    def kv_elements(self, tensor: int) -> int:
        """Elements per token of one layer's keys and values on one tensor rank: 2 x its local
        key/value heads (replicated where the tensor degree exceeds them, as Megatron-LM does)
        x the head width; 0 for a model without attention heads."""
        cfg = self.model.config
        heads = getattr(cfg, "heads", 0)
        if not heads:
            return 0
        kv = self.kv_heads or getattr(cfg, "kv_heads", 0) or heads
        return 2 * max(1, kv // tensor) * (cfg.embd // heads)

    @property
    def tokens_per_sample(self) -> int:
        """Positions per sample: the sequence for GPT, 1 for a classifier."""
        return getattr(self.model.config, "seq_len", 1)

    @functools.cached_property
    def piece_flops(self) -> tuple[float, ...]:
        """Training FLOPs of one sample per piece (docs/advise.md, Compute)."""
        cfg, seq = self.model.config, self.tokens_per_sample
        out = [0.0] * self.model.num_pieces
        for p in self.params:
            if len(p.shape) == 2 and not p.name.endswith(("wte.weight", "wpe.weight")):
                out[p.piece] += 6.0 * math.prod(p.shape) * seq
            elif len(p.shape) == 3:  # experts stacked on dim 0: a token passes top_k of them
                out[p.piece] += 6.0 * math.prod(p.shape[1:]) * seq * getattr(cfg, "top_k", 1)
        if isinstance(cfg, GPTConfig):
            for i in range(1, cfg.layers + 1):
                out[i] += 12.0 * seq * cfg.embd * seq
        return tuple(out)

    @property
    def flops_per_sample(self) -> float:
        return sum(self.piece_flops)

    def boundary_elements(self, cut: int) -> int:
        """Elements per sample of the activation entering piece ``cut`` (a pipeline boundary)."""
        cfg = self.model.config
        if isinstance(cfg, GPTConfig):
            return self.tokens_per_sample * cfg.embd
        return cfg.dims[cut]  # type: ignore[attr-defined, no-any-return]


@functools.cache
def shape_of(model: ModelSpec) -> Shape:
    return Shape(model, tuple(parameters(model)))


@functools.lru_cache(maxsize=4096)
def local_params(shape: Shape, tensor: int, pieces: frozenset[int]) -> tuple[Param, ...]:
    """The parameters of ``pieces`` with their tensor-parallel local shapes; under
    ``vocab_parallel`` the embedding and the LM head hold ceil(vocabulary / t) rows (Megatron-LM
    pads the vocabulary to a multiple of the tensor degree)."""
    vocab = shape.software.vocab_parallel and tensor > 1
    return tuple(Param(p.name, (-(-p.shape[0] // tensor), *p.shape[1:])
                       if vocab and p.name.endswith(VOCAB_MATRICES) else
                       tp_local(shape.plan, p, tensor) if tensor > 1 else p.shape, p.piece)
                 for p in shape.params if p.piece in pieces)


def custom_gpt(layers: int, hidden: int, heads: int, seq: int, vocab: int = VOCAB,
               mlp_width: int = 0, gated: bool = False, kv_heads: int = 0) -> ModelSpec:
    """A GPT of the reference family (:mod:`bench.models.gpt`) of this shape, not in the catalog:
    its MLP ``mlp_width`` wide (0: 4 x hidden), ``gated`` (SwiGLU), ``kv_heads`` key/value heads
    (0: the heads)."""
    cfg = GPTConfig(layers=layers, heads=heads, embd=hidden, vocab=vocab, seq_len=seq,
                    mlp_width=mlp_width, gated=gated, kv_heads=kv_heads)
    from bench.models.spec import ModelSpec, family_call  # torch once it is built, not before

    name = f"gpt-L{layers}-h{hidden}-a{heads}" + (f"-kv{kv_heads}" if kv_heads else "") + \
        (f"-f{mlp_width}" if mlp_width else "") + ("-swiglu" if gated else "")
    return ModelSpec(name, cfg, build=family_call("gpt", "build", cfg),
                     batch=family_call("gpt", "make_batch", cfg), loss=family_call("gpt", "loss"))


def custom_moe(cfg: MoEConfig) -> ModelSpec:
    """A mixture of experts of the reference family (:mod:`bench.models.moe`), not in the catalog."""
    from bench.models import moe
    from bench.models.base import ModelSpec

    return ModelSpec(f"moe-L{cfg.layers}-h{cfg.embd}-e{cfg.experts}k{cfg.top_k}", cfg,
                     build=functools.partial(moe.build, cfg),
                     batch=functools.partial(moe.make_batch, cfg), loss=moe.loss)


def with_seq(model: ModelSpec, seq: int) -> ModelSpec:
    """The same GPT with another sequence length (the position table follows it)."""
    cfg = model.config
    if not isinstance(cfg, GPTConfig):
        raise CommbenchError(f"--seq: model {model.name} has no sequence (it is a {cfg.family})")
    if seq == cfg.seq_len:
        return model
    if isinstance(cfg, MoEConfig):
        return custom_moe(dataclasses.replace(cfg, seq_len=seq))
    return custom_gpt(cfg.layers, cfg.embd, cfg.heads, seq, cfg.vocab, cfg.mlp_width, cfg.gated,
                      cfg.kv_heads)
