"""Host buffers for the MPI transport with transparent huge pages ``off`` (default, like the peer
tools' ``malloc``: ``MADV_NOHUGEPAGE``), ``on`` (2 MiB-aligned, ``MADV_HUGEPAGE``) or ``auto``
(numpy's allocator), and what the kernel actually gave, read back from ``/proc/self/smaps``.
Why: docs/measuring.md, "huge pages".
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np

HUGE = 2 << 20


def allocate(count: int, dtype: str, mode: str = "off") -> np.ndarray:
    """A zeroed array of ``count`` elements whose pages follow ``mode``."""
    if mode == "auto":
        return np.zeros(count, dtype=dtype)
    nbytes = max(1, count * np.dtype(dtype).itemsize)
    pad = HUGE if mode == "on" else 0
    mm = mmap.mmap(-1, nbytes + pad)
    advice = getattr(mmap, "MADV_HUGEPAGE" if mode == "on" else "MADV_NOHUGEPAGE", None)
    if advice is not None:
        mm.madvise(advice)
    raw = np.frombuffer(mm, dtype=np.uint8)
    start = (-raw.ctypes.data) % HUGE if pad else 0
    return raw[start:start + count * np.dtype(dtype).itemsize].view(dtype)


def hugepage_bytes(arr: np.ndarray, smaps: Path = Path("/proc/self/smaps")) -> int | None:
    """Bytes of transparent huge pages backing the mapping that holds ``arr`` (None where the
    kernel does not say)."""
    addr = arr.ctypes.data
    try:
        text = smaps.read_text()
    except OSError:
        return None
    inside = False
    for line in text.splitlines():
        head = line.split(maxsplit=1)[0] if line else ""
        if "-" in head and ":" not in head:
            lo, _, hi = head.partition("-")
            inside = int(lo, 16) <= addr < int(hi, 16)
        elif inside and line.startswith("AnonHugePages:"):
            return int(line.split()[1]) * 1024
    return None
