"""Memory per rank, measured: the tensors a trainer holds, the peak and the activations held for
backward. What each field means: docs/training.md (What is measured, and how)."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil
import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from bench.training.strategy import Trainer

CPU_PEAK = "CPU: process peak RSS (VmHWM, reset per case via /proc/self/clear_refs)"
CUDA_PEAK = "CUDA: torch.cuda.max_memory_allocated (reset per case)"


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t  # DTensor: this rank's shard


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(_local(t).numel() * _local(t).element_size() for t in tensors)


@dataclass(frozen=True)
class HeldBytes:
    params: int
    grads: int
    optim: int


def held_bytes(trainer: Trainer) -> HeldBytes:
    params = list({id(p): p for m in trainer.modules() for p in m.parameters()}.values())
    grads = [p.grad for p in params if p.grad is not None]
    states = [v for opt in trainer.optimizers() for st in opt.state.values() for v in st.values()
              if isinstance(v, torch.Tensor)]
    return HeldBytes(_nbytes(params), _nbytes(grads), _nbytes(states))


def _storages(t: torch.Tensor) -> list[tuple[int, int]]:
    """(key, bytes) of the storages behind ``t``: its own, or for a wrapper subclass (DTensor,
    the functional collectives' AsyncCollectiveTensor) those of the tensors it wraps."""
    if is_traceable_wrapper_subclass(t):
        attrs, _ = t.__tensor_flatten__()
        inner = [getattr(t, a) for a in attrs]
        return [s for x in inner if isinstance(x, torch.Tensor) for s in _storages(x)]
    storage = t.untyped_storage()
    return [(storage.data_ptr(), storage.nbytes())] if storage.nbytes() else []


class _Held:
    """What a pack hook hands autograd in place of the tensor: its collection releases the count."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


class SavedActivations:
    """``with SavedActivations() as a: step()``; then ``a.peak``: the most bytes held for
    backward at once during the step (by storage, parameters excluded)."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        self._refs: dict[int, int] = {}  # storage key -> saved tensors holding it
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def __enter__(self) -> SavedActivations:
        self._hooks.__enter__()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._hooks.__exit__(et, ev, tb)

    def _pack(self, t: torch.Tensor) -> Any:
        held = _Held(t)
        base = t._base if t._base is not None else t
        if base.is_leaf and base.requires_grad:  # a parameter or a view of one
            return held
        for key, nbytes in _storages(t):
            if self._refs.get(key, 0) == 0:
                self.live += nbytes
                self.peak = max(self.peak, self.live)
            self._refs[key] = self._refs.get(key, 0) + 1
            weakref.finalize(held, self._release, key, nbytes)
        return held

    def _release(self, key: int, nbytes: int) -> None:
        self._refs[key] -= 1
        if self._refs[key] == 0:
            del self._refs[key]
            self.live -= nbytes

    @staticmethod
    def _unpack(held: _Held) -> torch.Tensor:
        return held.tensor


class PeakMemory:
    """Peak memory over a case on this rank: ``start()`` resets, ``peak()`` reads."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.method = CUDA_PEAK if device.type == "cuda" else CPU_PEAK
        self._start = 0

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._start = torch.cuda.memory_allocated(self.device)
            return
        with contextlib.suppress(OSError):  # resets VmHWM to the current RSS
            Path("/proc/self/clear_refs").write_text("5")
        self._start = psutil.Process().memory_info().rss

    def peak(self) -> tuple[int, int]:
        """(peak bytes, peak above the start of the case)."""
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device)
        else:
            peak = _vm_hwm() or psutil.Process().memory_info().rss
        return peak, max(0, peak - self._start)


def _vm_hwm() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
