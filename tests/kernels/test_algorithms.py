"""Every registered (collective, algorithm) is proven by the symbolic verifier for p = 1..64 on flat
and node-structured topologies (uneven nodes included where the algorithm takes them), and its
bytes on the wire equal the closed form it declares. The registry is iterated: an algorithm file
added anywhere under ``kernels/algorithms`` is covered with no edit here."""

from __future__ import annotations

import itertools

import pytest

from kernels import collective as coll
from kernels.algorithm import Algorithm, Problem, algorithms_of
from kernels.bytecount import bytes_sent
from kernels.schedule import ScheduleError
from kernels.topology import Topology
from kernels.verify import verify

SCHEDULED: list[Algorithm] = [a for c in coll.names() for a in algorithms_of(c) if not a.is_vendor]
IDS = [f"{a.collective}/{a.name}" for a in SCHEDULED]


def _rpns(p: int) -> list[int]:
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    return sorted({1, divisors[len(divisors) // 2], p})


def _count(spec: coll.Collective, p: int, kind: str) -> int:
    per = {"one": 1, "p-1": max(1, p - 1), "p+1": p + 1, "prime": 7}[kind]
    return per * p if spec.divides else per


def _check(alg: Algorithm, problem: Problem) -> None:
    try:
        schedules = alg.schedules(problem)
    except ValueError as e:  # an algorithm may refuse a topology it cannot serve, in words
        assert "node" in str(e) or "topology" in str(e), e
        return
    verify(problem, schedules)
    if alg.sent is not None:
        for r, sch in enumerate(schedules):
            assert bytes_sent(sch, problem.topology, 1).total == alg.sent(problem, r), (
                f"rank {r}: counted bytes differ from the declared closed form")


def _roots(p: int, spec: coll.Collective) -> list[int]:
    return sorted({0, p - 1, p // 2}) if spec.rooted else [0]


@pytest.mark.slow  # the fast tier checks worlds 1-9 with every count, node shape and root
@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_every_world_size_to_64(alg: Algorithm) -> None:
    spec = coll.resolve(alg.collective)
    combos = itertools.cycle(itertools.product(("one", "p-1", "p+1", "prime"), (0, 1, 2)))
    for p in range(1, 65):
        kind, which = next(combos)
        rpns = _rpns(p)
        for root in _roots(p, spec)[:2]:
            _check(alg, Problem(Topology.blocks(p, rpns[which % len(rpns)]), _count(spec, p, kind),
                                4, alg.collective, root))


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_small_worlds_every_count_node_shape_and_root(alg: Algorithm) -> None:
    spec = coll.resolve(alg.collective)
    for p in range(1, 10):
        for rpn in _rpns(p):
            for kind in ("one", "p-1", "p+1", "prime"):
                for root in _roots(p, spec):
                    _check(alg, Problem(Topology.blocks(p, rpn), _count(spec, p, kind), 8,
                                        alg.collective, root))


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_uneven_and_cyclic_nodes(alg: Algorithm) -> None:
    spec = coll.resolve(alg.collective)
    shapes = [(0, 0, 0, 1, 1), (0, 1, 0, 1, 0, 1), (0, 0, 1, 2, 2, 2, 1), (1, 0, 1, 0)]
    for node_of in shapes:
        p = len(node_of)
        for root in _roots(p, spec):
            _check(alg, Problem(Topology(node_of), _count(spec, p, "prime"), 4, alg.collective,
                                root))


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_schedule_is_a_pure_function_of_rank(alg: Algorithm) -> None:
    spec = coll.resolve(alg.collective)
    pr = Problem(Topology.blocks(8, 4), _count(spec, 8, "prime"), 4, alg.collective)
    everyone = alg.schedules(pr)
    for r in (0, 5, 7):
        assert alg.schedule(pr, r) == everyone[r]


@pytest.mark.parametrize("alg", SCHEDULED, ids=IDS)
def test_dropping_a_step_is_caught(alg: Algorithm) -> None:
    """The verifier is not vacuous for this algorithm: without its busiest step it fails."""
    spec = coll.resolve(alg.collective)
    pr = Problem(Topology.blocks(6, 2), _count(spec, 6, "prime"), 4, alg.collective)
    good = alg.schedules(pr)
    busiest = max(range(len(good[0].steps)),
                  key=lambda i: sum(len(s.steps[i].recvs) + len(s.steps[i].copies) for s in good))
    from kernels.schedule import Schedule

    broken = [Schedule(s.rank, s.world, s.space, s.steps[:busiest] + s.steps[busiest + 1:])
              for s in good]
    with pytest.raises(ScheduleError):
        verify(pr, broken)


def test_every_collective_has_its_vendor_first() -> None:
    for c in coll.names():
        assert algorithms_of(c)[0].is_vendor
