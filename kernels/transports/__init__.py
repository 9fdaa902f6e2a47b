"""Transports by name. Each entry is a factory from the world MPI communicator (the control
plane every launch has) to a transport, imported lazily so a missing CuPy or torch costs nothing
until a scenario asks for that transport."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels.ops import DTYPES
from kernels.registry import Registry
from kernels.transports.base import Transport, TransportUnavailable
from kernels.transports.gpu_plan import DEVICE_DTYPES


@dataclass(frozen=True, slots=True)
class TransportSpec:
    name: str
    module: str  # imported on first use
    factory: str  # attribute of module: Callable[[MPI.Comm], Transport]
    summary: str
    family: str  # whose vendor calls it runs (a collective declares one per family)
    dtypes: tuple[str, ...] = tuple(DTYPES)  # element types it can run (checked at load time)
    device: bool = False  # buffers live on a GPU: self-launch defaults to one rank per GPU
    options: tuple[str, ...] = ()  # scenario settings its factory takes (e.g. hugepages)

    def create(self, comm: Any, **settings: Any) -> Transport:
        """The transport on ``comm``; of ``settings`` it gets the ones it declares."""
        try:
            mod = importlib.import_module(self.module)
        except ImportError as e:
            raise TransportUnavailable(f"transport {self.name}: cannot import {e.name}") from e
        make: Callable[..., Transport] = getattr(mod, self.factory)
        return make(comm, **{k: v for k, v in settings.items() if k in self.options})


TRANSPORTS: Registry[TransportSpec] = Registry("transport")
TRANSPORTS.add("mpi", TransportSpec("mpi", "kernels.transports.mpi", "MpiTransport",
                                    "mpi4py point-to-point on host (numpy) buffers", "mpi",
                                    options=("hugepages",)))
TRANSPORTS.add("torch", TransportSpec("torch", "kernels.transports.torch_p2p", "from_mpi",
                                      "torch.distributed batch_isend_irecv (gloo on CPU, NCCL on GPU)",
                                      "torch"))
TRANSPORTS.add("nccl", TransportSpec("nccl", "kernels.transports.nccl", "from_mpi",
                                     "CuPy + NCCL send/recv in group calls, one rank per GPU",
                                     "nccl", DEVICE_DTYPES, device=True))
TRANSPORTS.add("nccl-graph", TransportSpec("nccl-graph", "kernels.transports.nccl", "graph_from_mpi",
                                           "as nccl, each plan captured once as a CUDA graph (-G)",
                                           "nccl", DEVICE_DTYPES, device=True))
TRANSPORTS.add("mpi-cupy", TransportSpec("mpi-cupy", "kernels.transports.mpi_cupy", "from_mpi",
                                         "mpi4py on CuPy buffers (CUDA-aware, or pinned staging)",
                                         "mpi", DEVICE_DTYPES, device=True))
TRANSPORTS.add("cuda-ipc", TransportSpec("cuda-ipc", "kernels.transports.cuda_ipc", "from_mpi",
                                         "device-to-device pulls through CUDA IPC handles, one node",
                                         "mpi", DEVICE_DTYPES, device=True))

__all__ = ["TRANSPORTS", "Transport", "TransportSpec", "TransportUnavailable"]
