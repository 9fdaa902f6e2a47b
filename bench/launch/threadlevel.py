"""The MPI thread level: requested before MPI starts, recorded with every result. ``auto`` asks for
``funneled`` while the host's ranks fit its cores, ``multiple`` beyond (why, and the overrides:
docs/measuring.md)."""

from __future__ import annotations

import os
import sys
from typing import Any

LEVELS = ("auto", "single", "funneled", "serialized", "multiple")
ENV = "MPI4PY_RC_THREAD_LEVEL"  # mpi4py's own switch
# Ranks on this host, as launchers tell their ranks before MPI starts (Hydra, Open MPI, Slurm).
LOCAL_SIZE_ENV = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE",
                  "PMI_SIZE")


def local_ranks(env: dict[str, str] | None = None) -> int:
    """Ranks sharing this host, from the launcher's environment (1 when none says)."""
    env = dict(os.environ) if env is None else env
    for key in LOCAL_SIZE_ENV:
        value = env.get(key, "").split("(")[0].split(",")[0]
        if value.isdigit():
            return int(value)
    return 1


def choose(level: str, ranks: int, cores: int) -> str:
    """``auto``: funneled while the host's ranks fit its cores, multiple beyond (see above)."""
    if level != "auto":
        return level
    return "multiple" if ranks > cores else "funneled"


def request(level: str) -> str:
    """Ask for ``level`` when MPI starts (call before ``from mpi4py import MPI``); returns what
    will be requested. Once MPI is up it cannot change: the current request is returned."""
    import mpi4py

    if "mpi4py.MPI" in sys.modules:
        return str(mpi4py.rc.thread_level)
    chosen = choose(level, local_ranks(), os.cpu_count() or 1)
    mpi4py.rc.thread_level = os.environ.get(ENV) or chosen
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
    the main thread is inside MPI; otherwise the watchdog ends its own process."""
    return provided() == "multiple"
