"""A nanoGPT-like decoder: token + position embeddings, pre-LayerNorm blocks of causal
self-attention and a GELU MLP (or, ``gated``, a SwiGLU MLP: Llama's), final LayerNorm and an
*untied* LM head (tying would put one weight on the first and last pipeline stage). Separate
q/k/v projections let Megatron-style column sharding split whole heads; the head count follows
the (possibly sharded) width; with ``kv_heads``, keys and values have fewer heads, each shared
by heads / kv_heads query heads (grouped-query attention)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from bench.models.base import Batch, Chain, add_family
from bench.models.configs import GPTConfig
from bench.models.data import token_sequences


class Embed(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.embd)
        self.wpe = nn.Embedding(cfg.seq_len, cfg.embd)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.wte(idx) + self.wpe(pos)


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.head_dim = cfg.head_dim
        self.q = nn.Linear(cfg.embd, cfg.embd)
        self.k = nn.Linear(cfg.embd, cfg.kv_width)
        self.v = nn.Linear(cfg.embd, cfg.kv_width)
        self.proj = nn.Linear(cfg.embd, cfg.embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape

        def heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, -1, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        if k.shape[1] != q.shape[1]:  # grouped-query: each key/value head serves a group
            k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
            v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.embd, cfg.mlp_hidden)
        self.up = nn.Linear(cfg.embd, cfg.mlp_hidden) if cfg.gated else None
        self.proj = nn.Linear(cfg.mlp_hidden, cfg.embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.up is not None:  # SwiGLU: silu(gate) x up
            return self.proj(F.silu(self.fc(x)) * self.up(x))
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    """Pre-LayerNorm attention then a feed-forward module ``ffn(cfg)``, held as ``name``."""

    def __init__(self, cfg: GPTConfig, ffn: Callable[[Any], nn.Module] = MLP, name: str = "mlp"
                 ) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.embd)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.embd)
        self.ffn_name = name
        setattr(self, name, ffn(cfg))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + getattr(self, self.ffn_name)(self.ln2(x))


class Head(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_f = nn.LayerNorm(cfg.embd)
        self.lm_head = nn.Linear(cfg.embd, cfg.vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.ln_f(x))


def build(cfg: GPTConfig, block: Callable[[Any], nn.Module] = Block) -> Chain:
    return Chain([Embed(cfg), *(block(cfg) for _ in range(cfg.layers)), Head(cfg)])


def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def make_batch(cfg: GPTConfig, global_batch: int, step: int, seed: int) -> Batch:
    seq = token_sequences(seed, step, global_batch, cfg.seq_len, cfg.vocab)
    return Batch(seq[:, :-1].contiguous(), seq[:, 1:].contiguous(), global_batch * cfg.seq_len)


add_family(GPTConfig.family, build, make_batch, loss)
