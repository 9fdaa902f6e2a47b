"""Transports by name, each declared in its own file of ``kernels/transports/specs/`` (or of a
``COMMBENCH_PLUGINS`` package) by :func:`register`: a factory from the world MPI communicator (the
control plane every launch has) to a transport, named as module and attribute and imported on
first use, so a declaration imports no MPI, CuPy or torch and a missing one costs nothing until a
scenario asks for that transport."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels.ops import DTYPES
from kernels.registry import Registry, lazy
from kernels.transports.base import Transport, TransportUnavailable


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
    order: int = 1000  # listing order (built-ins: mpi first)
    needs_nccl: bool = False  # a device transport that also needs NCCL (``commbench env``)
    scope: str = ""  # where it runs when it runs at all ("one node"), for ``commbench env``

    def create(self, comm: Any, **settings: Any) -> Transport:
        """The transport on ``comm``; of ``settings`` it gets the ones it declares."""
        try:
            make: Callable[..., Transport] = lazy(f"{self.module}:{self.factory}")
        except ImportError as e:
            raise TransportUnavailable(f"transport {self.name}: cannot import {e.name}") from e
        return make(comm, **{k: v for k, v in settings.items() if k in self.options})


TRANSPORTS: Registry[TransportSpec] = Registry("transport", ("kernels.transports.specs",),
                                                order=lambda t: t.order)


def register(spec: TransportSpec) -> TransportSpec:
    """Called once in each transport's declaration file."""
    return TRANSPORTS.add(spec.name, spec)


__all__ = ["TRANSPORTS", "Transport", "TransportSpec", "TransportUnavailable", "register"]
