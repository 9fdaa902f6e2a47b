"""Vendor settings: the environment variables a vendor library reads as it starts (``NCCL_ALGO``,
MPICH's ``MPIR_CVAR_...``, Open MPI's ``OMPI_MCA_...``), as far as commbench knows what they mean.
A setting known to be meaningless where it would run is refused in one line; a variable of no
library here (``UCX_TLS``) is passed through unjudged (docs/scenarios.md, "Variants of the vendor
call")."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kernels.collective import Collective

# MPI's collective calls, spelled as in the standard (MPI_Allreduce -> "Allreduce"). A library's
# setting names one of them, its nonblocking form (I...) or its persistent form (..._init).
MPI_CALLS = ("Barrier", "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather",
             "Allgatherv", "Alltoall", "Alltoallv", "Alltoallw", "Reduce", "Allreduce",
             "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan", "Neighbor_allgather",
             "Neighbor_allgatherv", "Neighbor_alltoall", "Neighbor_alltoallv",
             "Neighbor_alltoallw")
_FORMS = sorted({f for c in MPI_CALLS for f in (c, "I" + c.lower(), c + "_init")},
                key=len, reverse=True)  # longest first: REDUCE_SCATTER_BLOCK before REDUCE


def _call_in(rest: str) -> str | None:
    """The MPI call ``rest`` starts with (``ALLREDUCE_INTRA_ALGORITHM`` -> ``Allreduce``), in the
    standard's spelling, or None."""
    for form in _FORMS:
        if rest.upper() == form.upper() or rest.upper().startswith(form.upper() + "_"):
            return form
    return None


_TUNED_ALGORITHM = re.compile(r"OMPI_MCA_coll_tuned_[a-z_]+_algorithm$")
_TRUE = ("1", "true", "yes", "on")


def _ompi_rules(env: Mapping[str, str]) -> str | None:
    forced = [k for k in env if _TUNED_ALGORITHM.match(k)]
    if forced and env.get("OMPI_MCA_coll_tuned_use_dynamic_rules", "").lower() not in _TRUE:
        return (f"{forced[0]} takes effect only with OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                "(add it to the variant's env)")
    return None


@dataclass(frozen=True)
class Library:
    name: str  # as said to the user
    prefix: str  # the prefix of its variables
    transport_family: str  # the family of transports whose vendor call it serves
    mpi: tuple[str, ...]  # the MPI library families that read it; () when not an MPI's
    call_in: str | None  # a variable's pattern whose group 1 starts with the MPI call it concerns
    whole: Callable[[Mapping[str, str]], str | None] = lambda env: None  # why the settings
    # together have no effect, or None

    def call_of(self, key: str) -> str | None:
        """The vendor call variable ``key`` concerns; None: every call."""
        m = re.match(self.call_in, key) if self.call_in else None
        return _call_in(m.group(1)) if m else None


LIBRARIES = (
    Library("NCCL", "NCCL_", "nccl", (), None),
    Library("MPICH", "MPIR_CVAR_", "mpi", ("mpich", "mvapich"), r"MPIR_CVAR_(.+)$"),
    Library("Open MPI", "OMPI_MCA_", "mpi", ("openmpi",), r"OMPI_MCA_coll_[a-z0-9]+_(.+)$",
            _ompi_rules),
    Library("Intel MPI", "I_MPI_", "mpi", ("intel",), r"I_MPI_ADJUST_(.+)$"),
)


def library_of(key: str) -> Library | None:
    return next((lib for lib in LIBRARIES if key.startswith(lib.prefix)), None)


def check_env(env: Mapping[str, str]) -> None:
    """ValueError (one line) when the settings cannot mean anything together: two libraries'
    variables in one variant, or a library's rule broken."""
    libs = {lib.name: lib for k in env if (lib := library_of(k)) is not None}
    if len(libs) > 1:
        raise ValueError(f"settings of {' and '.join(sorted(libs))} in one variant; a vendor "
                         "call reads one library's (give each its own variant)")
    for lib in libs.values():
        if (why := lib.whole(env)) is not None:
            raise ValueError(why)


def refusal(env: Mapping[str, str], spec: Collective, transport_family: str) -> str | None:
    """Why ``env`` is meaningless for ``spec``'s vendor call on a transport of
    ``transport_family``, or None when it may matter."""
    for key in env:
        lib = library_of(key)
        if lib is None:
            continue
        if lib.transport_family != transport_family:
            return (f"{key} is {lib.name}'s, read by {lib.transport_family} transports' vendor "
                    f"calls, not by {transport_family} ones")
        call = lib.call_of(key)
        mine = spec.vendor_names.get(transport_family)
        if call is not None and (mine is None or call.lower() != mine.lower()):
            what = f"calls MPI_{mine}" if mine else "makes no such call"
            return f"{key} concerns MPI_{call}; {spec.name} {what}"
    return None


def library_refusal(env: Mapping[str, str], mpi_family: str, mpi_library: str) -> str | None:
    """Why ``env`` is meaningless under the MPI library of ``mpi_family``, or None."""
    for key in env:
        lib = library_of(key)
        if lib is not None and lib.mpi and mpi_family not in lib.mpi:
            return f"{key} is read by {lib.name} only; this run's MPI is {mpi_library}"
    return None
