"""The MPI thread level: requested before MPI starts, recorded with every result.

mpi4py initialises MPI with ``MPI_THREAD_MULTIPLE`` unless told otherwise, and under MPICH that
alone adds ~2 us to every small collective (4 B all_reduce at p = 2: 0.3 us -> 1.8-3.1 us in
OSU's own C loop), so a default commbench run would not compare with OSU or nccl-tests, which
ask for less. commbench needs ``funneled`` (only the main thread calls MPI; torch's and the
watchdog's threads never do), so that is the default; a scenario's ``thread_level`` or
``--thread-level`` asks for another, and ``MPI4PY_RC_THREAD_LEVEL`` set by the user wins over
both. What the library provided is recorded (``mpi_thread_provided``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

LEVELS = ("single", "funneled", "serialized", "multiple")
ENV = "MPI4PY_RC_THREAD_LEVEL"  # mpi4py's own switch


def request(level: str) -> str:
    """Ask for ``level`` when MPI starts (call before ``from mpi4py import MPI``); returns what
    will be requested. Once MPI is up it cannot change: the current request is returned."""
    import mpi4py

    if "mpi4py.MPI" in sys.modules:
        return str(mpi4py.rc.thread_level)
    mpi4py.rc.thread_level = os.environ.get(ENV) or level
    return str(mpi4py.rc.thread_level)


def provided() -> str:
    """The level the running MPI library provided."""
    from mpi4py import MPI

    names = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
             MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    return names.get(MPI.Query_thread(), str(MPI.Query_thread()))


def thread_fields() -> dict[str, Any]:
    """``mpi_thread_requested`` / ``mpi_thread_provided`` for records and meta."""
    import mpi4py

    return {"mpi_thread_requested": str(mpi4py.rc.thread_level), "mpi_thread_provided": provided()}


def may_abort_from_thread() -> bool:
    """Only under ``multiple`` may a helper thread call MPI (the watchdog's ``MPI_Abort``) while
    the main thread is inside MPI; otherwise the watchdog ends its own process and the launcher
    tears the job down."""
    return provided() == "multiple"
