"""Reference models by name: an MLP, a nanoGPT-like decoder and a small ResNet-style convnet.

Every model is a chain of *pieces* (``model.pieces``, an ``nn.ModuleList``) applied in order, so
the pipeline strategy can cut it into balanced stages without knowing the model. Each named
config comes with a synthetic, fixed-seed, learnable data set (see :mod:`bench.models.data`).
Importing this package imports torch.
"""

from __future__ import annotations

from bench.models.base import MODELS, ModelSpec, model_spec

# Importing the model modules registers their named configs.
from bench.models import convnet, gpt, mlp  # noqa: F401  isort: skip

__all__ = ["MODELS", "ModelSpec", "model_spec"]
