"""What a probe job needs before it measures: its layout (nodes, link classes) and, when the
scenario emulates a cluster, the link delay to wait before each message (``bench/emulate``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.costmodel.delay import LinkDelay
from bench.probe.links import Layout, from_launch, from_placed
from bench.probe.scenario import ProbeScenario
from bench.probe.settings import Wait


@dataclass(frozen=True)
class Setup:
    layout: Layout
    delay: LinkDelay | None = None
    wait: Wait = time.sleep


def prepare(sc: ProbeScenario, hosts: Sequence[str]) -> Setup:
    """The job's setup; ValueError with one line when the job cannot run ``sc``."""
    p = len(hosts)
    if p < 2:
        raise ValueError(f"a probe needs at least 2 ranks (one pair); this job has {p}")
    if sc.world_size is not None and sc.world_size != p:
        raise ValueError(f"world_size {sc.world_size}: this job has {p} ranks")
    if sc.emulate is not None:
        return _emulated(sc, hosts)
    try:
        layout = from_launch(hosts, sc.ranks_per_node)
    except ValueError as e:
        raise ValueError(f"ranks_per_node: {e}") from None
    return Setup(layout)


def _emulated(sc: ProbeScenario, hosts: Sequence[str]) -> Setup:
    """Nodes and leaves from the emulated topology, delays from its links, waited by the
    emulation's own waiter (sleep, then a short spin: :mod:`bench.emulate.wait`)."""
    from bench.emulate.wait import SleepWaiter

    assert sc.emulate is not None
    if len(set(hosts)) > 1:
        raise ValueError(f"emulate: the job spans {len(set(hosts))} hosts; an emulated cluster "
                         "runs on one")
    links = sc.emulate.job(len(hosts)).links  # ValueError (one line) when the job does not fit
    placed = links.placed
    layout = from_placed(hosts, placed.node_of, placed.leaf_of, sc.emulate.topology)
    waiter = SleepWaiter()
    return Setup(layout, links, lambda s: waiter.until(waiter.mark(), s))
