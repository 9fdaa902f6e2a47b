"""Floors: what a case must reach, stated in the scenario (``expect:``), held without a baseline;
a case below its floor gets ``status: below_floor`` and fails the run. docs/scenarios.md,
"Floors (``expect:``)"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from bench.scenario_base import Frozen
from bench.units import format_size, parse_size
from kernels import collective as coll
from kernels.registry import UnknownName

BELOW = "below_floor"  # the status of a record below its floor

Size = Annotated[int, BeforeValidator(parse_size)]


class Floor(Frozen):
    collective: str
    min_size: Annotated[Size, Field(ge=0)] = 0
    max_size: Size | None = None  # none: no upper bound
    busbw_gbps: Annotated[float, Field(gt=0)] | None = None
    pct_of_expected: Annotated[float, Field(gt=0)] | None = None

    @field_validator("collective")
    @classmethod
    def _known(cls, v: str) -> str:
        try:
            return coll.resolve(v).name
        except UnknownName as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="after")
    def _one(self) -> Floor:
        if (self.busbw_gbps is None) == (self.pct_of_expected is None):
            raise ValueError("give exactly one of busbw_gbps and pct_of_expected")
        if self.max_size is not None and self.max_size < self.min_size:
            raise ValueError(f"max_size {self.max_size} is below min_size {self.min_size}")
        return self

    def covers(self, rec: Mapping[str, Any]) -> bool:
        n = int(rec.get("nbytes") or 0)
        return (rec.get("collective") == self.collective and n >= self.min_size
                and (self.max_size is None or n <= self.max_size))

    def describe(self) -> str:
        top = format_size(self.max_size) if self.max_size is not None else "up"
        floor = (f"{self.busbw_gbps:g} GB/s busbw" if self.busbw_gbps is not None
                 else f"{self.pct_of_expected:g} % of expected")
        return f"{self.collective} {format_size(self.min_size)}-{top}: {floor}"

    def missed(self, rec: Mapping[str, Any]) -> float | None:
        """The record's figure when it is below this floor (None: met, or not measurable)."""
        key, floor = (("busbw_gbps", self.busbw_gbps) if self.busbw_gbps is not None
                      else ("pct_of_expected", self.pct_of_expected))
        got = rec.get(key)
        if not isinstance(got, int | float) or got != got:
            return None
        return float(got) if got < floor else None  # type: ignore[operator]


def hold(rec: dict[str, Any], floors: Sequence[Floor], hosts: Sequence[str]) -> bool:
    """Hold an ``ok`` record to the first floor that covers it; below it, mark it (status,
    ``floor``) and return True."""
    if rec.get("status") != "ok":
        return False
    for f in floors:
        if f.covers(rec) and (got := f.missed(rec)) is not None:
            rec["status"] = BELOW
            rec["floor"] = {"expect": f.describe(), "got": round(got, 3),
                            "hosts": sorted(set(hosts))}
            rec["reason"] = line(rec)
            return True
    return False


def line(rec: Mapping[str, Any]) -> str:
    """One below-floor record in words."""
    f = rec.get("floor") or {}
    unit = " GB/s" if "GB/s" in str(f.get("expect")) else " %"
    return (f"{rec.get('collective')} {format_size(int(rec.get('nbytes') or 0))} "
            f"{rec.get('algorithm')} p={rec.get('world_size')} on {', '.join(f.get('hosts', []))}: "
            f"{f.get('got')}{unit} below the floor ({f.get('expect')})")


def failures(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The lines of a run's records below their floors."""
    return [line(r) for r in records if r.get("status") == BELOW]


def summary(lines: Sequence[str]) -> str:
    """The run's reason when cases are below their floors."""
    n = len(lines)
    return f"{n} case{'s' if n > 1 else ''} below {'their floors' if n > 1 else 'its floor'} (expect:)"
