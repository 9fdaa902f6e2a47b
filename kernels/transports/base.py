"""The transport interface: the only code that touches the wire.

A transport allocates buffers, compiles a schedule into a :class:`Plan` (buffer views and
requests made once), binds a collective's vendor call (looked up by its ``family``) behind the
same interface, and offers the barrier and device synchronisation the harness needs around its
clock. It never reads a clock itself and never names a collective.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from kernels.collective import Collective, Layout
from kernels.ops import ReduceOp
from kernels.schedule import Schedule


class Plan(Protocol):
    """One compiled collective on fixed buffers; ``run`` may be called any number of times."""

    def run(self) -> None: ...

    def close(self) -> None: ...


class Transport(Protocol):
    name: str
    family: str  # which vendor call of a collective it runs: "mpi", "torch" or "nccl"
    rank: int
    size: int

    def allocate(self, count: int, dtype: str) -> Any:
        """A zeroed buffer of ``count`` elements (numpy or device array)."""
        ...

    def upload(self, buf: Any, host: np.ndarray) -> None:
        """Copy host data into ``buf``."""
        ...

    def download(self, buf: Any) -> np.ndarray:
        """``buf``'s contents as a host numpy array."""
        ...

    def compile(self, schedule: Schedule, buf: Any, scratch: Any, op: ReduceOp) -> Plan:
        """``schedule`` on the workspace ``buf``; reducing receives land in ``scratch`` (a
        workspace-sized buffer, or None when the schedule never reduces)."""
        ...

    def vendor(self, spec: Collective, buf: Any, layout: Layout, op: ReduceOp | None,
               root: int) -> Plan:
        """``spec``'s vendor call on the send/receive regions of ``layout`` in ``buf``; raises
        :class:`VendorUnavailable` when the collective declares none for this family."""
        ...

    def barrier(self) -> None: ...

    def synchronize(self) -> None:
        """Wait until work queued on the device is done (no-op for host buffers)."""
        ...

    def close(self) -> None: ...


class TransportUnavailable(RuntimeError):
    """This transport cannot run here; the message says why in one line (skip reason)."""


class VendorUnavailable(RuntimeError):
    """The collective has no vendor call for this transport (the case is skipped, with this)."""


def views(buf: Any, layout: Layout) -> tuple[Any, Any]:
    """(send, receive) views of ``buf`` per ``layout`` (None where the rank has no such region);
    slicing works alike on numpy, CuPy and torch buffers."""
    send = buf[layout.inp.start:layout.inp.stop] if layout.inp is not None else None
    recv = buf[layout.out.start:layout.out.stop] if layout.out is not None else None
    return send, recv


class Bound:
    """A vendor call bound to its buffers: a :class:`Plan` whose ``run`` is that call; ``keep``
    holds what the call points into (buffer specs made once)."""

    def __init__(self, run: Callable[[], None], keep: Any = None) -> None:
        self.run, self._keep = run, keep

    def close(self) -> None:
        pass


def vendor_call(spec: Collective, family: str) -> Any:
    """The collective's vendor call for ``family``, or :class:`VendorUnavailable`."""
    call = spec.vendor.get(family)
    if call is None:
        raise VendorUnavailable(f"{spec.name} declares no vendor call for {family} transports")
    return call
