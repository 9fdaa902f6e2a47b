"""A GPT's parameter table (``GPTConfig.parameter_shapes``, torch-free: what advise and the
analytic memory model read) is exactly what the built model's ``named_parameters`` lists, in its
order; a family without a table (the mixture of experts) is read from the built model."""

from __future__ import annotations

import functools
import math

import pytest

pytest.importorskip("torch", reason="the built model needs torch")

from bench.models.configs import GPTConfig, MoEConfig


def _built(cfg: GPTConfig) -> tuple[tuple[str, tuple[int, ...]], ...]:
    from bench.models import gpt, moe
    from bench.models.meta import on_meta

    family = moe if isinstance(cfg, MoEConfig) else gpt
    return tuple((n, tuple(p.shape)) for n, p in
                 on_meta(functools.partial(family.build, cfg)).named_parameters())


@pytest.mark.parametrize("cfg", [
    GPTConfig(layers=6, heads=4, embd=32, vocab=64, seq_len=16),  # gpt-tiny
    GPTConfig(layers=1, heads=1, embd=8, vocab=3, seq_len=5),
    GPTConfig(layers=3, heads=6, embd=48, vocab=50304, seq_len=7),
    GPTConfig(layers=2, heads=8, embd=64, vocab=100, seq_len=8, mlp_width=96, gated=True,
              kv_heads=2),  # Llama-shaped: SwiGLU of its own width, grouped-query attention
], ids=["gpt-tiny", "one-layer", "odd", "llama-shaped"])
def test_the_table_is_the_built_models_parameters_in_order(cfg: GPTConfig) -> None:
    assert cfg.parameter_shapes() == _built(cfg)


def test_a_custom_gpt_is_sized_without_torch_and_built_with_it() -> None:
    """advise's custom shape: its parameters and pieces from the table; built, the same."""
    from bench.advise.shape import custom_gpt
    from bench.training.analytic import parameters
    from bench.training.stages import piece_sizes

    model = custom_gpt(2, 16, 2, 4, 10)
    table = model.config.parameter_shapes()
    assert [(p.name, p.shape) for p in parameters(model)] == list(table)
    built = model.build_meta()
    assert [(n, tuple(p.shape)) for n, p in built.named_parameters()] == list(table)
    assert piece_sizes(model) == tuple(sum(p.numel() for p in piece.parameters())
                                       for piece in built.pieces)


def test_a_mixture_of_experts_is_read_from_the_built_model() -> None:
    from bench.advise.shape import custom_moe
    from bench.training.analytic import parameters

    cfg = MoEConfig(layers=2, heads=2, embd=16, vocab=10, seq_len=4, experts=4, top_k=2, ffn=8)
    assert cfg.parameter_shapes() is None
    assert [(p.name, p.shape) for p in parameters(custom_moe(cfg))] == list(_built(cfg))


def test_llama_shaped_block_runs_and_counts() -> None:
    """A gated, grouped-query block built and run (CPU, fp32): the logits' shape; the table's
    count of Llama 2 70B's shape (80 layers, 8192 wide, 64 heads, 8 key/value heads, SwiGLU of
    28,672, vocabulary 32,000, untied) counted matrix by matrix."""
    import torch

    from bench.models import gpt

    cfg = GPTConfig(layers=2, heads=4, embd=32, vocab=50, seq_len=8, mlp_width=40, gated=True,
                    kv_heads=2)
    model = gpt.build(cfg)
    idx = torch.randint(0, 50, (3, 8))
    assert tuple(model(idx).shape) == (3, 8, 50)
    big = GPTConfig(layers=80, heads=64, embd=8192, vocab=32000, seq_len=4096, mlp_width=28672,
                    gated=True, kv_heads=8)
    h, kv, f = 8192, 1024, 28672
    matrices = 80 * (2 * h * h + 2 * h * kv + 3 * h * f) + 2 * 32000 * h
    vectors = 80 * (4 * h + h + 2 * kv + 2 * f + h + h) + 4096 * h + 2 * h  # biases, norms, wpe
    assert sum(math.prod(s) for _, s in big.parameter_shapes()) == matrices + vectors
    assert big.tp_linears()["pieces.1.attn.k"].out_features == kv
    assert big.tp_linears()["pieces.1.mlp.up"].style == "colwise"
