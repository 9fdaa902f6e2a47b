"""What the MPI library holds for the settings a run gave it, read through MPI's tool information
interface (MPI_T control variables, MPI 4.0 §15.3) from the library the process has loaded, and
what it reports of the algorithm it ran. MPICH and Open MPI report no algorithm choice in release
builds (MPICH has no performance variable for it, Open MPI's tuned component logs it only in
debug builds), so ``mpi_chosen`` is :data:`NOT_REPORTED`; the NCCL counterpart, ``nccl_chosen``,
comes from NCCL's own log. docs/results.md, "Record fields"."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from collections.abc import Iterable
from typing import Any

NOT_REPORTED = "not reported"
UNKNOWN = "unknown to the library (no such control variable: it has no effect)"
_SUCCESS = 0
# MPICH lets its device override the MPIR-level algorithm of a call (MPIR_CVAR_DEVICE_COLLECTIVES:
# all / none / percoll, then MPIR_CVAR_<CALL>_DEVICE_COLLECTIVE): read them beside the algorithm.
_MPICH_ALGORITHM = re.compile(r"MPIR_CVAR_([A-Z_]+)_INTRA_ALGORITHM$")


def cvar_name(variable: str) -> str:
    """The control variable an environment variable sets: MPICH's have the same name, Open MPI's
    ``OMPI_MCA_x`` is MCA parameter ``x``."""
    return variable.removeprefix("OMPI_MCA_")


def variables_to_read(env: Iterable[str]) -> list[str]:
    """The variant's library variables, and for an MPICH algorithm the ones that decide whether
    the device may override it."""
    out: list[str] = []
    for key in env:
        if not key.startswith(("MPIR_CVAR_", "OMPI_MCA_")):
            continue
        out.append(key)
        if m := _MPICH_ALGORITHM.match(key):
            out += ["MPIR_CVAR_DEVICE_COLLECTIVES", f"MPIR_CVAR_{m.group(1)}_DEVICE_COLLECTIVE"]
    return list(dict.fromkeys(out))


def _libmpi() -> ctypes.CDLL | None:
    """The MPI library this process has loaded (mpi4py's), else the system's, else None."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            path = next((ln.split()[-1] for ln in maps if "/libmpi" in ln), None)
    except OSError:
        path = None
    path = path or ctypes.util.find_library("mpi")
    try:
        return ctypes.CDLL(path) if path else None
    except OSError:
        return None


def held(variables: Iterable[str]) -> dict[str, Any]:
    """Each variable's value as the loaded MPI library holds it (an int, a float, a string or an
    enumeration's item name), :data:`UNKNOWN`, or why it could not be read."""
    names = list(variables)
    lib = _libmpi()
    provided = ctypes.c_int()
    if lib is None or not hasattr(lib, "MPI_T_init_thread") or lib.MPI_T_init_thread(
            0, ctypes.byref(provided)) != _SUCCESS:
        return dict.fromkeys(names, "not readable (no MPI_T interface in the loaded MPI)")
    try:
        return {n: _read(lib, cvar_name(n)) for n in names}
    finally:
        lib.MPI_T_finalize()


def _read(lib: ctypes.CDLL, name: str) -> Any:
    from mpi4py import MPI

    index = ctypes.c_int()
    if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != _SUCCESS:
        return UNKNOWN
    dtype, enum = ctypes.c_void_p(), ctypes.c_void_p()
    out_len, desc_len, verbosity, bind, scope = (ctypes.c_int(0) for _ in range(5))
    lib.MPI_T_cvar_get_info(index, None, ctypes.byref(out_len), ctypes.byref(verbosity),
                            ctypes.byref(dtype), ctypes.byref(enum), None, ctypes.byref(desc_len),
                            ctypes.byref(bind), ctypes.byref(scope))
    handle, count = ctypes.c_void_p(), ctypes.c_int()
    if lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle), ctypes.byref(count)):
        return "not readable (bound to an MPI object)"
    buf = ctypes.create_string_buffer(max(8 * count.value, 256))
    try:
        lib.MPI_T_cvar_read(handle, buf)
    finally:
        lib.MPI_T_cvar_handle_free(ctypes.byref(handle))
    kind = MPI.Datatype.fromhandle(dtype.value or 0)
    if kind == MPI.CHAR:
        return buf.value.decode(errors="replace")
    if kind == MPI.DOUBLE:
        return ctypes.c_double.from_buffer(buf).value
    value = int.from_bytes(buf.raw[:kind.Get_size()], "little", signed=kind == MPI.INT)
    return _item(lib, enum, value) if enum.value else value


def _item(lib: ctypes.CDLL, enum: ctypes.c_void_p, value: int) -> Any:
    """The enumeration's name of ``value`` (Open MPI declares its algorithm choices as one)."""
    items, name_len = ctypes.c_int(), ctypes.c_int(0)
    lib.MPI_T_enum_get_info(enum, ctypes.byref(items), None, ctypes.byref(name_len))
    for i in range(items.value):
        got, text, text_len = ctypes.c_int(), ctypes.create_string_buffer(256), ctypes.c_int(256)
        if (lib.MPI_T_enum_get_item(enum, i, ctypes.byref(got), text, ctypes.byref(text_len))
                == _SUCCESS and got.value == value):
            return text.value.decode(errors="replace")
    return value
