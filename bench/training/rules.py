"""The strategies' names and rules, without torch: which (strategy, model, world size) cases can
run, checked on model metadata (:mod:`bench.models.catalog`) alone.

:data:`RULES` is the registry of strategy names that scenarios accept; every torch strategy
(:mod:`bench.training.strategies`, ``@strategy(name)``) takes its ``check`` from here, so a case
is judged by the same function when a scenario loads and when a rank is about to run it. A new
strategy adds its rule here (``@rule("name")``, or ``add_rule("name")`` when any case can run).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.models.catalog import ModelInfo
from kernels.registry import Registry


class StrategySpec(Protocol):
    """What the rules read of a strategy (``bench.training.scenario.StrategySpec`` has it; kept
    as a protocol so the scenario imports the rules and never the other way round)."""

    hook: str
    schedule: str
    microbatches: int
    tensor_degree: int
    servers: int
    precision: str

    @property
    def pipeline_stages_per_rank(self) -> int: ...

    def checkpointed(self, pieces: int) -> frozenset[int]: ...


Check = Callable[[StrategySpec, ModelInfo, int], None]  # raises ValueError with one line


@dataclass(frozen=True)
class Rule:
    name: str
    check: Check


RULES: Registry[Rule] = Registry("strategy")


def no_check(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    return None


def add_rule(name: str, check: Check = no_check) -> Check:
    RULES.add(name, Rule(name, check))
    return check


def rule(name: str) -> Callable[[Check], Check]:
    """Register ``check(spec, model, world)`` as strategy ``name``'s rule."""

    def deco(check: Check) -> Check:
        return add_rule(name, check)

    return deco


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


def bf16_hook_allowed() -> bool:
    """DDP's own condition for registering ``bf16_compress_hook`` (``_check_comm_hook`` in
    torch/nn/parallel/distributed.py): a CUDA/ROCm build with NCCL >= 2.10, or XPU with XCCL. It
    tests the build, not the backend: gloo reduces bf16 on CPU, so ``backend: gloo`` runs it too.
    A CPU-only build has neither NCCL nor XCCL, which is known without importing torch; only an
    accelerator build imports torch to ask."""
    if not accelerator_build():
        return False
    import torch
    import torch.distributed as dist

    cuda_build = torch.version.cuda is not None or torch.version.hip is not None
    nccl = cuda_build and dist.is_nccl_available() and torch.cuda.nccl.version() >= (2, 10)
    xccl = dist.is_xccl_available() and torch.xpu.is_available()
    return bool(nccl or xccl)


def check_options(spec: StrategySpec, model: ModelInfo) -> None:
    """The options every strategy takes: checkpointed pieces must exist in the model."""
    bad = sorted(i for i in spec.checkpointed(model.num_pieces) if i >= model.num_pieces)
    if bad:
        raise ValueError(f"checkpoint names piece {bad[0]}, but the model has {model.num_pieces} "
                         f"pieces (0..{model.num_pieces - 1})")


@rule("ddp")
def _ddp(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    if spec.hook == "bf16" and not bf16_hook_allowed():
        raise ValueError("hook bf16 needs CUDA and NCCL: DDP takes bf16_compress_hook only in a "
                         "CUDA build of torch with NCCL >= 2.10; use fp16 on this one")


add_rule("zero1")
add_rule("zero2")
add_rule("zero3")


@rule("tensor")
def _tensor(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    check_degree(model, world)


@rule("pipeline")
def _pipeline(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    stages = world * spec.pipeline_stages_per_rank
    if stages > model.num_pieces:
        raise ValueError(f"{stages} pipeline stages exceed the model's {model.num_pieces} pieces")
    if spec.schedule == "interleaved" and spec.pipeline_stages_per_rank < 2:
        raise ValueError("interleaved 1F1B needs stages_per_rank >= 2")
    if spec.schedule != "interleaved" and spec.pipeline_stages_per_rank != 1:
        raise ValueError(f"{spec.schedule} runs one stage per rank (stages_per_rank: 1)")
    if spec.schedule == "interleaved" and spec.microbatches % world:
        raise ValueError(f"interleaved 1F1B needs microbatches ({spec.microbatches}) to be a "
                         f"multiple of the world size")


@rule("hybrid")
def _hybrid(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    if world % spec.tensor_degree:
        raise ValueError(f"tensor_degree {spec.tensor_degree} does not divide the world size")
    check_degree(model, spec.tensor_degree)


@rule("ps")
def _ps(spec: StrategySpec, model: ModelInfo, world: int) -> None:
    if spec.servers >= world:
        raise ValueError(f"ps needs at least one worker: {spec.servers} server rank(s) of "
                         f"{world} leave none")
