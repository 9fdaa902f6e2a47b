"""Reduction operators and element types, by name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ReduceOp:
    name: str
    ufunc: np.ufunc  # applied in place: ufunc(dst, incoming, out=dst); CuPy has the same names


OPS: dict[str, ReduceOp] = {
    op.name: op
    for op in (
        ReduceOp("sum", np.add),
        ReduceOp("prod", np.multiply),
        ReduceOp("max", np.maximum),
        ReduceOp("min", np.minimum),
    )
}

# Element types a scenario may name. bfloat16 exists only on device transports (CuPy/torch).
DTYPES: dict[str, str] = {
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "int32": "int32",
    "int64": "int64",
}

# The numpy dtype of host-side data (fills, downloads) per element type: numpy has no bfloat16,
# and every bfloat16 value is exactly a float32, so device transports convert at upload/download.
HOST_DTYPE: dict[str, str] = {**DTYPES, "bfloat16": "float32"}

ITEMSIZE: dict[str, int] = {"float32": 4, "float64": 8, "float16": 2, "int32": 4, "int64": 8,
                            "bfloat16": 2}
