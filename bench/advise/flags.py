"""The flags that state a model by its shape, declared once for every command that builds one
(``advise``, ``gemm``); read by :func:`bench.advise.cli.shape_from_args`. No heavy import."""

from __future__ import annotations

import argparse

from bench.argtypes import params, positive_int

VOCAB = 50304  # nanoGPT's padded GPT-2 vocabulary, the reference GPT's default


def add_shape_flags(p: argparse.ArgumentParser, what: argparse._MutuallyExclusiveGroup) -> None:
    """``--params`` into ``what`` (the group beside ``--model``), its shape flags into ``p``."""
    what.add_argument("--params", type=params,
                      help="a GPT by parameter count, with --layers --hidden --heads")
    p.add_argument("--layers", type=positive_int, help="with --params: transformer blocks")
    p.add_argument("--hidden", type=positive_int, help="with --params: model width")
    p.add_argument("--heads", type=positive_int, help="with --params: attention heads")
    p.add_argument("--kv-heads", type=positive_int, default=None,
                   help="with --params: grouped-query attention's key/value heads (default: "
                        "--heads): the key and value projections' width, and what context "
                        "parallelism gathers")
    p.add_argument("--vocab", type=positive_int, default=VOCAB,
                   help=f"with --params: vocabulary ({VOCAB})")
    p.add_argument("--ffn", type=positive_int, default=None,
                   help="with --params: the MLP's hidden width (default 4 x --hidden; with "
                        "--experts: each expert's width, Mixtral 8x7B's 14336)")
    p.add_argument("--gated", action="store_true",
                   help="with --params: a gated MLP (SwiGLU: gate, up and down matrices, Llama's)")
