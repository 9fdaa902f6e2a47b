"""On an oversubscribed host, the confirmation pass pins the pair it measures to two different
cores for the block, then gives each rank its cores back.

Ranks left to the scheduler can sit stacked on one core for a whole check (it keeps a woken
process where it ran when no core is idle), and a ping-pong between two ranks on one core waits
a time slice per message: the pair looks slow alone too. The lower rank of the pair takes the
first core it is allowed, the higher the second, so a suspect and its reference are measured
alike. Where affinity cannot be set (not Linux, one core), nothing is pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def pinned(slot: int, enabled: bool = True) -> Iterator[bool]:
    """This process on its ``slot``-th allowed core for the block; yields whether it is."""
    get = getattr(os, "sched_getaffinity", None)
    put = getattr(os, "sched_setaffinity", None)
    allowed = sorted(get(0)) if enabled and get and put else []
    if len(allowed) < 2:
        yield False
        return
    try:
        put(0, {allowed[slot % len(allowed)]})  # type: ignore[misc]
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            put(0, set(allowed))  # type: ignore[misc]
