"""Byte sizes as people write them: "8B", "64KiB", "1GiB", "4M" (nccl-tests' K/M/G = 1024^n)."""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KB": 1000, "KIB": 1 << 10,
    "M": 1 << 20, "MB": 1000**2, "MIB": 1 << 20,
    "G": 1 << 30, "GB": 1000**3, "GIB": 1 << 30,
    "T": 1 << 40, "TB": 1000**4, "TIB": 1 << 40,
}
_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
MAX_SIZES = 1000  # sizes one sweep may expand to (a factor of 1.0000001 is a typo, not a plan)


def parse_size(value: str | int) -> int:
    """Bytes in ``value``; raises ValueError naming the bad text."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"size must be at least 1 byte, got {value}")
        return value
    m = _RE.match(str(value))
    if m and re.fullmatch(r"[kKmMgGtT]b", m.group(2)):
        raise ValueError(f"{value!r} is in bits (lowercase b); sizes are bytes: write "
                         f"{m.group(1)}{m.group(2)[:-1].upper()}iB or {m.group(1)}{m.group(2)[:-1].upper()}B")
    unit = m.group(2).upper() if m else None
    if not m or unit not in _UNITS:
        raise ValueError(f"not a size: {value!r} (use e.g. 8B, 64KiB, 16MiB, 1GiB)")
    n = float(m.group(1)) * _UNITS[unit]
    if n < 1 or n != int(n):
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return int(n)


def format_size(nbytes: int) -> str:
    """Shortest exact binary form: 8B, 64KiB, 1.5MiB only when not exact -> bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def size_range(lo: int, hi: int, factor: float) -> list[int]:
    """nccl-tests' -b/-e/-f: lo, lo*f, ... up to and including hi (at most MAX_SIZES; a size
    that rounds to the one before it is not repeated)."""
    out, n = [], float(lo)
    while n <= hi and len(out) < MAX_SIZES:
        if not out or int(n) != out[-1]:
            out.append(int(n))
        n *= factor
    return out


_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)bit\s*$", re.IGNORECASE)


def parse_rate(value: str) -> float:
    """Bytes per second in a link rate written as ``tc`` and NIC sheets do, in bits per second
    with SI prefixes: "250mbit", "1gbit", "400Gbit"; raises ValueError naming the bad text."""
    m = _RATE.match(str(value))
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"not a link rate: {value!r} (use e.g. 250mbit, 1gbit)")
    return float(m.group(1)) * 1000 ** " kmgt".index(m.group(2).lower() or " ") / 8
