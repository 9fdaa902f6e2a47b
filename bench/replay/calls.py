"""One call as one rank's trace shows it, and the byte rule every format shares: nccl-tests'
size S, as training counts it (:mod:`bench.training.comm`): all_reduce / broadcast the buffer,
all_gather the gathered output, reduce_scatter the input, all_to_all the input, send / recv the
message (a receive counted apart, as ``recv``)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.argtypes import CommbenchError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send", "recv")
P2P = ("send", "recv")
# torch / NCCL element type names -> commbench's (numpy) names
DTYPES = {"float": "float32", "float32": "float32", "half": "float16", "float16": "float16",
          "c10::half": "float16", "double": "float64", "float64": "float64",
          "bfloat16": "bfloat16", "c10::bfloat16": "bfloat16", "int": "int32", "int32": "int32",
          "long": "int64", "int64": "int64", "char": "int8", "int8": "int8", "byte": "uint8",
          "unsigned char": "uint8", "uint8": "uint8", "bool": "uint8", "uint32": "uint32",
          "uint64": "uint64", "short": "int16"}
ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2, "int32": 4, "int64": 8,
            "int8": 1, "uint8": 1, "uint32": 4, "uint64": 8, "int16": 2, "float8_e4m3": 1,
            "float8_e5m2": 1}


class TraceError(CommbenchError, ValueError):
    """A trace that cannot be replayed; ``str()`` is one line naming the file and the event."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(" ".join(f"{where}: {message}".split()))


def document(path: Path, parse: Callable[[bytes], Any], errors: tuple[type[Exception], ...],
             what: str, key: str, kind: str) -> dict[str, Any]:
    """``path`` parsed into a mapping holding a list at ``key``; a TraceError naming the file
    when it cannot be read, is cut short (``errors``) or is no ``kind``."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise TraceError(str(path), e.strerror or str(e)) from None
    try:
        doc = parse(raw)
    except errors as e:
        raise TraceError(str(path), f"not a complete {what} ({str(e)[:80]}): truncated?") from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise TraceError(str(path), f"no {key}: not a {kind}")
    return doc


def ranks_of(value: Any, where: str) -> tuple[int, ...]:
    """A trace's list of ranks (a list, or its text ``[0, 1]``)."""
    try:
        got = ast.literal_eval(value) if isinstance(value, str) else value
        return tuple(int(x) for x in got)
    except (ValueError, SyntaxError, TypeError):
        raise TraceError(where, f"Process Group Ranks {str(value)[:40]!r} is not a list of "
                                "ranks") from None


def dtype_name(name: str, where: str) -> str:
    """commbench's name of a trace's element type (``Float``, ``c10::Half``, ``float``)."""
    key = str(name).strip().lower()
    got = DTYPES.get(key, key if key in ITEMSIZE else None)
    if got is None:
        raise TraceError(where, f"unknown element type {str(name)[:40]!r}")
    return got


@dataclass(frozen=True)
class RankCall:
    """One communication call of one rank, in the rank's order."""

    rank: int  # global rank
    op: str  # one of OPS
    nbytes: int  # size S (see the module docstring)
    dtype: str
    where: str  # "file: event N (name)": what an error names
    group: tuple[int, ...] | None = None  # global ranks of its process group (None: unknown)
    peer: int | None = None  # send / recv: the global rank at the other end
    root: int | None = None  # broadcast: the global root
    start_us: float | None = None  # on the rank's own clock
    end_us: float | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise TraceError(self.where, f"unknown operation {self.op!r}")
        if self.nbytes < 0 or self.nbytes % ITEMSIZE[self.dtype]:
            raise TraceError(self.where, f"{self.nbytes} bytes is not whole {self.dtype} elements")

    @property
    def signature(self) -> tuple[str, int, str]:
        return (self.op, self.nbytes, self.dtype)
