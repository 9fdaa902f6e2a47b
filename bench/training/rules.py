"""Rules the strategies share, checked on model metadata without torch: whether a tensor degree
shards a model, whether the installed torch is an accelerator build."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from bench.models.catalog import ModelInfo


def check_degree(model: ModelInfo, degree: int) -> None:
    """Raise ValueError when ``degree`` cannot shard ``model``'s tensor-parallel plan evenly."""
    if model.tp_plan is None:
        raise ValueError(f"model {model.name} has no tensor-parallel plan")
    if model.heads is not None and model.heads % degree:
        raise ValueError(f"tensor degree {degree} does not divide the {model.heads} attention heads")
    for path, dim in model.sharded_widths().items():
        if dim % degree:
            raise ValueError(f"tensor degree {degree} does not divide {path}'s sharded width {dim}")


def accelerator_build() -> bool:
    """False when the installed torch is a CPU-only build (no CUDA, ROCm or XPU in its
    ``torch/version.py``), read without importing torch; True when it may not be."""
    spec = importlib.util.find_spec("torch")  # finds the package without running it
    if spec is None or spec.origin is None:
        return False  # no torch at all: no DDP either
    try:
        found = _constants(Path(spec.origin).parent / "version.py")
    except (OSError, SyntaxError, ValueError):
        return True  # cannot tell: ask torch
    if not {"cuda", "hip", "xpu"} <= found.keys():
        return True  # an older or unusual version.py: ask torch
    return any(found[k] is not None for k in ("cuda", "hip", "xpu"))


def _constants(path: Path) -> dict[str, object]:
    """Module-level ``name = constant`` (annotated or not) assignments of a Python file."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            found[target.id] = value.value
    return found

