"""A testbed (bench.testbed) for one test module: made on entry, removed with every process on it
on exit; skips with the one-line reason where it cannot be made (not root, no iproute2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench.testbed import net
from bench.testbed.spec import Pace, Testbed


@contextmanager
def running_testbed(hosts: int, tag: str, pace: tuple[tuple[int, Pace], ...] = (),
                    cpu: tuple[tuple[int, float], ...] = ()) -> Iterator[Testbed]:
    why = net.missing()
    if why:
        pytest.skip(why)
    tb = Testbed(hosts, tag, pace=pace, cpu=cpu)
    net.up(tb)
    try:
        yield tb
    finally:
        net.down(tag)
