"""The transport interface: the only code that touches the wire.

A transport allocates buffers, compiles a schedule into a :class:`Plan` (buffer views and
requests made once, so running it does no planning or allocation), runs the vendor collective
behind the same :class:`Plan` interface, and offers the barrier and device synchronisation the
harness needs around its clock. It never reads a clock itself.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from kernels.ops import ReduceOp
from kernels.schedule import Schedule


class Plan(Protocol):
    """One compiled AllReduce on fixed buffers; ``run`` may be called any number of times."""

    def run(self) -> None: ...

    def close(self) -> None: ...


class Transport(Protocol):
    name: str
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

    def compile(self, schedule: Schedule, buf: Any, scratch: Any, op: ReduceOp) -> Plan: ...

    def vendor(self, buf: Any, op: ReduceOp) -> Plan:
        """The vendor AllReduce of ``buf`` in place."""
        ...

    def barrier(self) -> None: ...

    def synchronize(self) -> None:
        """Wait until work queued on the device is done (no-op for host buffers)."""
        ...

    def close(self) -> None: ...


class TransportUnavailable(RuntimeError):
    """This transport cannot run here; the message says why in one line (skip reason)."""
