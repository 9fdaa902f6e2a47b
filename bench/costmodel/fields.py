"""The typed numbers of a profile file (pydantic, lax where YAML needs it): YAML 1.1 reads
``4.5e11`` (no dot-sign form) as a string, so a number may come as text; a bool never counts as
a number, and a count is an integer as written."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    return value


Number = Annotated[float, BeforeValidator(_not_bool), Field(allow_inf_nan=False)]
NonNegative = Annotated[Number, Field(ge=0)]
Positive = Annotated[Number, Field(gt=0)]
Fraction = Annotated[Number, Field(gt=0, le=1)]  # an achieved share of a nominal figure
Count = Annotated[int, Strict(), Field(ge=1)]
Index = Annotated[int, Strict(), Field(ge=0)]
