"""The named reference models, without torch: each name's config and what a scenario's checks
read from it (pieces, attention heads, the tensor-parallel plan and its sharded widths)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.models.configs import ConvConfig, GPTConfig, MLPConfig, ModelConfig, MoEConfig
from kernels.registry import Registry


@dataclass(frozen=True)
class ModelInfo:
    """A named config and what follows from it."""

    name: str
    config: ModelConfig  # the family's frozen config dataclass

    @property
    def family(self) -> str:  # "mlp", "gpt", "moe", "convnet"
        return self.config.family

    @property
    def heads(self) -> int | None:
        """Attention heads (a tensor-parallel degree must divide them); None without attention."""
        return self.config.heads

    @property
    def num_pieces(self) -> int:
        """Length of the model's chain of pieces (what the pipeline cuts into stages)."""
        return self.config.pieces

    @property
    def tp_plan(self) -> Callable[[], dict[str, str]] | None:
        """Module path -> "colwise" | "rowwise", or None for a model without a plan."""
        linears = self.config.tp_linears()
        if linears is None:
            return None
        return lambda: {path: lin.style for path, lin in linears.items()}

    def sharded_widths(self) -> dict[str, int]:
        """Module path -> the width that tensor parallelism splits (empty without a plan)."""
        return {path: lin.sharded_width for path, lin in (self.config.tp_linears() or {}).items()}


CATALOG: Registry[ModelInfo] = Registry("model")

for _name, _cfg in (
    ("mlp", MLPConfig(d_in=32, hidden=32, layers=7, classes=8)),
    ("mlp-large", MLPConfig(d_in=1024, hidden=4096, layers=8, classes=1000)),
    ("gpt-tiny", GPTConfig(layers=6, heads=4, embd=32, vocab=64, seq_len=16)),
    ("gpt-small", GPTConfig(layers=4, heads=4, embd=128, vocab=512, seq_len=64)),
    ("gpt2-124m", GPTConfig(layers=12, heads=12, embd=768, vocab=50304, seq_len=1024)),
    ("gpt-350m", GPTConfig(layers=24, heads=16, embd=1024, vocab=50304, seq_len=1024)),
    ("gpt-1.3b", GPTConfig(layers=24, heads=16, embd=2048, vocab=50304, seq_len=2048)),
    ("gpt-6.7b", GPTConfig(layers=32, heads=32, embd=4096, vocab=50304, seq_len=2048)),
    # capacity 1.0 drops assignments in most steps: the tests see the drop path
    ("moe-tiny", MoEConfig(layers=2, heads=2, embd=16, vocab=32, seq_len=8, experts=4, top_k=2,
                           ffn=32, capacity_factor=1.0)),
    ("moe-small", MoEConfig(layers=4, heads=4, embd=128, vocab=512, seq_len=64, experts=8,
                            top_k=2, ffn=256)),
    ("convnet", ConvConfig(channels=16, blocks=2, image=16, classes=10)),
    ("resnet-medium", ConvConfig(channels=128, blocks=8, image=64, classes=100)),
):
    CATALOG.add(_name, ModelInfo(_name, _cfg))
