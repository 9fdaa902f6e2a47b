"""The model families' frozen configs and what follows from a config alone, without torch: its
pieces, attention heads and tensor-parallel plan (every ``nn.Linear`` the plan shards, with its
widths), held equal to the built model by tests/training/test_training_rules.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from bench.argtypes import CommbenchError

Style = Literal["colwise", "rowwise"]


@dataclass(frozen=True)
class TPLinear:
    """One ``nn.Linear(in_features, out_features)`` of a tensor-parallel plan."""

    style: Style
    in_features: int
    out_features: int

    @property
    def sharded_width(self) -> int:
        """The width split across ranks: colwise shards the outputs (weight dim 0), rowwise the
        inputs (weight dim 1)."""
        return self.out_features if self.style == "colwise" else self.in_features


class ModelConfig(Protocol):
    """What validation reads from any family's config."""

    family: ClassVar[str]

    @property
    def pieces(self) -> int: ...

    @property
    def heads(self) -> int | None: ...

    def tp_linears(self) -> dict[str, TPLinear] | None: ...


@dataclass(frozen=True)
class MLPConfig:
    family: ClassVar[str] = "mlp"
    heads: ClassVar[None] = None  # no attention
    d_in: int
    hidden: int
    layers: int  # hidden layers
    classes: int

    @property
    def dims(self) -> list[int]:
        """Feature widths from inputs to logits: piece ``i`` is ``Dense(dims[i], dims[i + 1])``."""
        return [self.d_in] + [self.hidden] * self.layers + [self.classes]

    @property
    def pieces(self) -> int:
        return len(self.dims) - 1

    def tp_linears(self) -> dict[str, TPLinear]:
        """Megatron pairs: even layers column-parallel, the following layer row-parallel. An odd
        last layer stays replicated."""
        d = self.dims
        plan = {}
        for i in range(0, self.pieces - 1, 2):
            plan[f"pieces.{i}.fc"] = TPLinear("colwise", d[i], d[i + 1])
            plan[f"pieces.{i + 1}.fc"] = TPLinear("rowwise", d[i + 1], d[i + 2])
        return plan


@dataclass(frozen=True)
class GPTConfig:
    family: ClassVar[str] = "gpt"
    layers: int
    heads: int
    embd: int
    vocab: int
    seq_len: int  # block size; batches use this many tokens per sample
    mlp_width: int = 0  # the MLP's hidden width (0: 4 x embd, GPT's)
    gated: bool = False  # a gated MLP (SwiGLU: gate, up and down matrices; Llama's)
    kv_heads: int = 0  # grouped-query attention's key/value heads (0: every head has its own)

    def __post_init__(self) -> None:
        if self.embd % self.heads:
            raise CommbenchError(f"embd {self.embd} is not a multiple of heads {self.heads}")
        if self.kv_heads and (self.kv_heads < 0 or self.heads % self.kv_heads):
            raise CommbenchError(f"key/value heads {self.kv_heads} must divide the {self.heads} "
                                 "heads")
        if self.mlp_width < 0:
            raise CommbenchError(f"mlp_width must be >= 0, got {self.mlp_width}")

    @property
    def head_dim(self) -> int:
        return self.embd // self.heads

    @property
    def mlp_hidden(self) -> int:
        return self.mlp_width or 4 * self.embd

    @property
    def kv_width(self) -> int:
        """Outputs of the key (and of the value) projection: key/value heads x head width."""
        return (self.kv_heads or self.heads) * self.head_dim

    @property
    def mlp_modules(self) -> tuple[str, ...]:
        """The MLP's Linears in ``named_parameters`` order (gated: the gate ``fc``, ``up``)."""
        return ("mlp.fc", "mlp.up", "mlp.proj") if self.gated else ("mlp.fc", "mlp.proj")

    @property
    def pieces(self) -> int:
        return self.layers + 2  # embeddings, the blocks, the head

    def parameter_shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
        """Every parameter of :mod:`bench.models.gpt`'s model as ``named_parameters`` lists it
        (name, shape), without torch (tests/models/test_parameter_table.py holds it equal)."""
        e, lin = self.embd, self.tp_linears()
        out: list[tuple[str, tuple[int, ...]]] = [
            ("pieces.0.wte.weight", (self.vocab, e)), ("pieces.0.wpe.weight", (self.seq_len, e))]
        for i in range(1, self.layers + 1):
            for mod in ("ln1", "attn.q", "attn.k", "attn.v", "attn.proj", "ln2", *self.mlp_modules):
                path = f"pieces.{i}.{mod}"
                w = lin.get(path)
                weight = (w.out_features, w.in_features) if w else (e,)
                out += [(f"{path}.weight", weight), (f"{path}.bias", weight[:1])]
        head = self.layers + 1
        return (*out, (f"pieces.{head}.ln_f.weight", (e,)), (f"pieces.{head}.ln_f.bias", (e,)),
                (f"pieces.{head}.lm_head.weight", (self.vocab, e)))

    def tp_linears(self) -> dict[str, TPLinear]:
        """Megatron: q/k/v and fc (and a gated MLP's up) column-parallel, the projections after
        them row-parallel."""
        e, f, kv = self.embd, self.mlp_hidden, self.kv_width
        plan = {}
        for i in range(1, self.layers + 1):
            for name, out in (("attn.q", e), ("attn.k", kv), ("attn.v", kv)):
                plan[f"pieces.{i}.{name}"] = TPLinear("colwise", e, out)
            plan[f"pieces.{i}.mlp.fc"] = TPLinear("colwise", e, f)
            if self.gated:
                plan[f"pieces.{i}.mlp.up"] = TPLinear("colwise", e, f)
            plan[f"pieces.{i}.attn.proj"] = TPLinear("rowwise", e, e)
            plan[f"pieces.{i}.mlp.proj"] = TPLinear("rowwise", f, e)
        return plan


@dataclass(frozen=True)
class MoEConfig(GPTConfig):
    """The GPT decoder with every MLP replaced by a mixture of ``experts`` SwiGLU experts of width
    ``ffn``: each token goes to its ``top_k`` experts by a softmax router, and each expert takes at
    most ``capacity`` assignments of one sequence (the rest are dropped, the residual passes).
    No tensor-parallel plan: its experts are sharded by expert parallelism instead."""

    family: ClassVar[str] = "moe"
    experts: int = 4
    top_k: int = 2
    ffn: int = 64  # each expert's hidden width
    capacity_factor: float = 1.25

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.top_k <= self.experts:
            raise CommbenchError(f"top_k {self.top_k} must lie in 1..experts ({self.experts})")
        if self.capacity_factor <= 0:
            raise CommbenchError(f"capacity_factor must be > 0, got {self.capacity_factor}")

    def parameter_shapes(self) -> None:
        """None: its experts and router are read from the built model."""
        return None

    @property
    def capacity(self) -> int:
        """Assignments one expert takes from one sequence: ceil(factor * seq * top_k / experts)
        (GShard's per-group capacity, a sequence being the group: the same on one rank or many)."""
        return math.ceil(self.capacity_factor * self.seq_len * self.top_k / self.experts)

    def tp_linears(self) -> None:  # type: ignore[override]
        return None


@dataclass(frozen=True)
class ConvConfig:
    family: ClassVar[str] = "convnet"
    heads: ClassVar[None] = None  # no attention
    channels: int
    blocks: int
    image: int  # square images of this side, 3 channels
    classes: int

    @property
    def pieces(self) -> int:
        return self.blocks + 2  # stem, the blocks, the classifier

    def tp_linears(self) -> dict[str, TPLinear] | None:
        return None  # no tensor-parallel plan
