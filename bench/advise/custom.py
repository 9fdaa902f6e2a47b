"""Models by parameter count: ``--params 7.5B`` (with ``--layers/--hidden/--heads``: a GPT of
that shape; without: a flat parameter list for model-state memory only)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from bench.argtypes import CommbenchError, param_count
from bench.models.catalog import ModelInfo
from bench.training.analytic import Param

FLAT_TENSORS = 1024  # equal tensors: ZeRO-1's whole-tensor greedy split is even for N | 1024


def flat_params(total: int, tensors: int = FLAT_TENSORS) -> list[Param]:
    """``total`` parameters as ``tensors`` 1-D tensors of near-equal size (one piece each): the
    ZeRO paper's accounting, where every stage divides the model states evenly."""
    if total < 1:
        raise CommbenchError(f"--params must be >= 1, got {total}")
    n = min(tensors, total)
    base, extra = divmod(total, n)
    return [Param(f"pieces.{i}.weight", (base + (i < extra),), i) for i in range(n)]


PARAMS_TOLERANCE = 0.10  # --params and the shape's own count may differ by this much (vocab, biases)


def check_params(text: str, built: int) -> None:
    """``--params`` must name about the model the shape builds: a count far from it is a
    contradiction between two flags, refused (ValueError, one line) rather than footnoted."""
    asked = param_count(text)
    gap = relative_gap(asked, built)
    if gap > PARAMS_TOLERANCE:
        raise CommbenchError(f"--params {text}: the shape (--layers --hidden --heads) gives "
                             f"{built / 1e9:.3g}B parameters, {gap:.0%} apart (at most "
                             f"{PARAMS_TOLERANCE:.0%}); give --params {built / 1e9:.3g}B or fix the "
                             "shape")


def relative_gap(asked: int, built: int) -> float:
    return abs(built - asked) / asked if asked else math.inf


@dataclass(frozen=True)
class FlatConfig:
    """A model known only by its parameter count: ``pieces`` tensors, no attention, no
    tensor-parallel plan, no activation model (family ``flat``)."""

    family: ClassVar[str] = "flat"
    heads: ClassVar[None] = None
    pieces: int

    def tp_linears(self) -> None:
        return None


def flat_model(total: int) -> tuple[ModelInfo, list[Param]]:
    """A :class:`ModelInfo` and its parameters for ``total`` parameters (:func:`flat_params`)."""
    ps = flat_params(total)
    return ModelInfo(f"{total / 1e9:g}B parameters (flat)", FlatConfig(len(ps))), ps
