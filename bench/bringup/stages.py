"""Which ranks measure together in each stage: rounds of disjoint groups of hosts (docs/bringup.md).
Hosts are numbered by first rank."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.measure.pairs import rounds


@dataclass(frozen=True)
class Group:
    """One group of a round: the hosts (by index) whose ranks measure together."""

    hosts: tuple[int, ...]


Round = tuple[Group, ...]


def host_ranks(names: Sequence[str]) -> list[list[int]]:
    """Ranks of each host, hosts numbered by first rank, from every rank's host name."""
    out: dict[str, list[int]] = {}  # in order of first rank
    for rank, name in enumerate(names):
        out.setdefault(name, []).append(rank)
    return list(out.values())


def pair_rounds(n: int) -> list[Round]:
    """Every pair of ``n`` hosts exactly once, in rounds of disjoint pairs: the probe's rounds
    (:func:`bench.measure.pairs.rounds`), n-1 for even n, n with one host idle each for odd n."""
    return [tuple(Group(pair) for pair in r) for r in rounds(n)] if n >= 2 else []


def scale_counts(n: int) -> list[int]:
    """Host counts of the scale stage: 2, 4, 8, ... below ``n`` (n is the all stage)."""
    out, k = [], 2
    while k < n:
        out.append(k)
        k *= 2
    return out


def plan(stage: str, n: int, at_once: int | None = None) -> list[Round]:
    """The rounds of ``stage`` on ``n`` hosts (none where the stage has nothing to measure), each
    of at most ``at_once`` groups (a round of more is split in its order)."""
    k = at_once or n
    return [rnd[i:i + k] for rnd in ROUNDS[stage](n) for i in range(0, len(rnd), k)]


ROUNDS: dict[str, Callable[[int], list[Round]]] = {  # each stage's rounds on n hosts
    "host": lambda n: [tuple(Group((h,)) for h in range(n))],
    "pairs": pair_rounds,
    "all": lambda n: [(Group(tuple(range(n))),)] if n > 1 else [],
    "scale": lambda n: [(Group(tuple(range(k))),) for k in scale_counts(n)],
}
