"""Transports by name. Each entry is a factory from the world MPI communicator (the control
plane every launch has) to a transport, imported lazily so a missing CuPy or torch costs nothing
until a scenario asks for that transport."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels.registry import Registry
from kernels.transports.base import Transport, TransportUnavailable


@dataclass(frozen=True, slots=True)
class TransportSpec:
    name: str
    module: str  # imported on first use
    factory: str  # attribute of module: Callable[[MPI.Comm], Transport]
    summary: str

    def create(self, comm: Any) -> Transport:
        try:
            mod = importlib.import_module(self.module)
        except ImportError as e:
            raise TransportUnavailable(f"transport {self.name}: cannot import {e.name}") from e
        make: Callable[[Any], Transport] = getattr(mod, self.factory)
        return make(comm)


TRANSPORTS: Registry[TransportSpec] = Registry("transport")
TRANSPORTS.add("mpi", TransportSpec("mpi", "kernels.transports.mpi", "MpiTransport",
                                    "mpi4py point-to-point on host (numpy) buffers"))
TRANSPORTS.add("torch", TransportSpec("torch", "kernels.transports.torch_p2p", "from_mpi",
                                      "torch.distributed batch_isend_irecv (gloo on CPU, NCCL on GPU)"))

__all__ = ["TRANSPORTS", "Transport", "TransportSpec", "TransportUnavailable"]
