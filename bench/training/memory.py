"""Memory per rank, measured: exact bytes of the tensors a trainer holds, and the peak.

Parameters, gradients and optimizer state are counted from the tensors themselves (DTensors by
their local shard, tensors shared by several modules once). The peak is CUDA's
``max_memory_allocated`` on GPUs; on CPU, where torch keeps no allocator statistics, it is the
process's peak resident set (VmHWM, reset per case through /proc/self/clear_refs), which
includes the Python and torch runtime; ``mem_peak_above_start_bytes`` subtracts the resident
set at the start of the case.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

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
