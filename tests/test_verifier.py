"""The symbolic verifier proves every algorithm for p = 1..64, and catches broken schedules."""

from __future__ import annotations

import itertools

import pytest

import kernels.algorithms  # noqa: F401
from kernels.algorithm import ALGORITHMS, Problem
from kernels.schedule import Range, Recv, Schedule, ScheduleError, Send, Step, StepBuilder, validate
from kernels.topology import Topology
from kernels.verify import verify_allreduce

SCHEDULED = [n for n in ALGORITHMS.names() if not ALGORITHMS.get(n).is_vendor]


def _rpns(p: int) -> list[int]:
    divisors = [d for d in range(1, p + 1) if p % d == 0]
    return sorted({1, divisors[len(divisors) // 2], p})


@pytest.mark.parametrize("name", SCHEDULED)
def test_every_world_size_to_64(name: str) -> None:
    alg = ALGORITHMS.get(name)
    combos = itertools.cycle(itertools.product(("one", "p-1", "p+1", "3p+2"), (0, 1, 2)))
    for p in range(1, 65):
        kind, which = next(combos)
        count = {"one": 1, "p-1": max(1, p - 1), "p+1": p + 1, "3p+2": 3 * p + 2}[kind]
        rpns = _rpns(p)
        rpn = rpns[which % len(rpns)]
        verify_allreduce(alg.schedules(Problem(Topology.blocks(p, rpn), count, 4)))


@pytest.mark.parametrize("name", SCHEDULED)
def test_small_worlds_every_count_and_node_shape(name: str) -> None:
    alg = ALGORITHMS.get(name)
    for p in range(1, 13):
        for rpn in _rpns(p):
            for count in sorted({1, max(1, p - 1), p, p + 1, 2 * p + 3, 101}):
                verify_allreduce(alg.schedules(Problem(Topology.blocks(p, rpn), count, 8)))


def test_tree_pipelines_large_buffers() -> None:
    alg = ALGORITHMS.get("tree")
    sch = alg.schedules(Problem(Topology.flat(7), 4 << 20, 4))  # 16 MiB -> 16 chunks
    verify_allreduce(sch)
    depth = 2
    assert len(sch[0].steps) < 16 + 4 * depth + 4  # pipelined, not 2 * depth * 16


def test_schedule_is_a_pure_function_of_rank() -> None:
    alg = ALGORITHMS.get("hierarchical")
    pr = Problem(Topology.blocks(8, 4), 1000, 4)
    assert alg.schedules(pr)[5] == alg.schedule(pr, 5)


def _pair(steps0: tuple[Step, ...], steps1: tuple[Step, ...], count: int = 4) -> list[Schedule]:
    return [Schedule(0, 2, count, steps0), Schedule(1, 2, count, steps1)]


R = Range(0, 4)


def test_rejects_send_without_receive() -> None:
    with pytest.raises(ScheduleError, match="sends"):
        validate(_pair((Step(sends=(Send(1, R),)),), (Step(),)))


def test_rejects_size_mismatch() -> None:
    with pytest.raises(ScheduleError, match="receives"):
        validate(_pair((Step(sends=(Send(1, R),)),), (Step(recvs=(Recv(0, Range(0, 3), True),)),)))


def test_rejects_double_write_in_a_step() -> None:
    b = StepBuilder(3, 4)
    st = b.step()
    b.move(1, 0, R, reduce=True, step=st)
    b.move(2, 0, R, reduce=True, step=st)
    with pytest.raises(ScheduleError, match="written twice"):
        validate(b.build_all())


def test_rejects_receiving_into_what_is_sent() -> None:
    steps0 = (Step(sends=(Send(1, R),), recvs=(Recv(1, R, False),)),)
    steps1 = (Step(sends=(Send(0, R),), recvs=(Recv(0, R, False),)),)
    with pytest.raises(ScheduleError, match="while receiving"):
        validate(_pair(steps0, steps1))


def test_rejects_counting_a_contribution_twice() -> None:
    b = StepBuilder(2, 4)
    b.move(0, 1, R, reduce=True, step=b.step())
    b.move(1, 0, R, reduce=False, step=b.step())
    b.move(0, 1, R, reduce=True, step=b.step())  # rank 1 already holds rank 0's input
    with pytest.raises(ScheduleError, match="twice"):
        verify_allreduce(b.build_all())


def test_rejects_incomplete_allreduce() -> None:
    b = StepBuilder(3, 4)
    b.move(1, 0, R, reduce=True, step=b.step())  # rank 2 never contributes
    st = b.step()
    b.move(0, 1, R, reduce=False, step=st)
    b.move(0, 2, R, reduce=False, step=st)
    with pytest.raises(ScheduleError, match="missing contributions of ranks \\[2\\]"):
        verify_allreduce(b.build_all())


def test_a_broken_ring_is_caught() -> None:
    """Drop one reduce-scatter step of a real ring: the verifier must notice."""
    good = ALGORITHMS.get("ring").schedules(Problem(Topology.flat(4), 8, 4))
    broken = [Schedule(s.rank, s.world, s.count, s.steps[:1] + s.steps[2:]) for s in good]
    with pytest.raises(ScheduleError):
        verify_allreduce(broken)


@pytest.mark.parametrize("name", SCHEDULED)
def test_nodes_need_not_be_contiguous_ranks(name: str) -> None:
    """srun's cyclic placement: rank r on node r % N."""
    for p, n in [(4, 2), (6, 3), (8, 2), (9, 3)]:
        topo = Topology(tuple(r % n for r in range(p)))
        for count in (1, p + 1, 50):
            verify_allreduce(ALGORITHMS.get(name).schedules(Problem(topo, count, 4)))
