"""The definitions of this kind, on numbers alone (no MPI): which ranks form each communicator of
a group, a group's slowdown, and OSU's overlap percentage (``print_stats_nbc`` in OMB's
c/util/osu_util.c; docs/concurrency.md, "Overlap, OSU's definition"), which commbench clamps to
[0, 100], recording the unclamped value beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernels.topology import Topology


def group_key(group: str, mode: str, rnd: int, nbytes: int) -> tuple[Any, ...]:
    """One step of the groups' cases (a resumed run skips those with a record): ``group`` timed
    ``mode`` (alone or together) in round ``rnd`` at the requested ``nbytes``."""
    return ("group", group, mode, int(rnd), int(nbytes))


def overlap_key(case: Mapping[str, Any], nbytes: int) -> tuple[Any, ...]:
    """One overlap case: its collective (as its record names it), algorithm and progress at the
    requested ``nbytes``."""
    from kernels.collective import resolve

    return ("overlap", resolve(case["collective"]).name, case["algorithm"], case["progress"],
            int(nbytes))


def communicators(members: str | Sequence[Sequence[int]], topo: Topology) -> list[list[int]]:
    """The communicators (lists of world ranks) of a group whose members are ``members``:
    ``node`` one per node, ``across`` one per place on a node (the ranks at the same local index
    of every node), ``all`` every rank, or the explicit lists."""
    if not isinstance(members, str):
        out = [list(c) for c in members]
        bad = [r for c in out for r in c if r >= topo.world]
        if bad:
            raise ValueError(f"members: rank {bad[0]} is not in a job of {topo.world} ranks")
        return out
    nodes = topo.nodes()
    by = {"node": lambda: nodes,
          "across": lambda: [[n[i] for n in nodes] for i in range(topo.ranks_per_node)],
          "all": lambda: [list(range(topo.world))]}
    return by[members]()


def slowdown(alone_us: float, together_us: float) -> float:
    """How many times longer a group takes beside the others than alone."""
    return together_us / alone_us


def overlap_unclamped(overall_us: float, compute_us: float, comm_us: float,
                      test_us: float = 0.0) -> float:
    """OSU's overlap before its clamp: 100 - 100 (overall - (compute - test)) / comm."""
    return 100.0 - 100.0 * (overall_us - (compute_us - test_us)) / comm_us


def overlap_pct(overall_us: float, compute_us: float, comm_us: float, test_us: float = 0.0) -> float:
    """OSU's overlap %, clamped to [0, 100] (see the module's docstring)."""
    return min(100.0, max(0.0, overlap_unclamped(overall_us, compute_us, comm_us, test_us)))


def mean_over_ranks(per_rank_means: Sequence[float]) -> float:
    """OSU's aggregate of a time: each rank's mean over iterations, summed and divided by p."""
    return sum(per_rank_means) / len(per_rank_means)
