"""The IR's rules and the symbolic verifier catch broken schedules (every registered algorithm is
proven in tests/kernels/test_algorithms.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.algorithm import Problem, get_algorithm
from kernels.schedule import (
    Copy,
    Range,
    Recv,
    Schedule,
    ScheduleError,
    Send,
    Step,
    StepBuilder,
    _sends_meet_writes,
    validate,
)
from kernels.topology import Topology
from kernels.verify import verify


def verify_allreduce(schedules: list[Schedule]) -> None:
    """The all_reduce case of :func:`verify`, for schedules built on a flat problem."""
    verify(Problem(Topology.flat(schedules[0].world), schedules[0].space, 1, "all_reduce"),
           schedules)


def test_tree_pipelines_large_buffers() -> None:
    alg = get_algorithm("all_reduce", "tree")
    sch = alg.schedules(Problem(Topology.flat(7), 4 << 20, 4))  # 16 MiB -> 16 chunks
    verify_allreduce(sch)
    depth = 2
    assert len(sch[0].steps) < 16 + 4 * depth + 4  # pipelined, not 2 * depth * 16


def test_schedule_is_a_pure_function_of_rank() -> None:
    alg = get_algorithm("all_reduce", "hierarchical")
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
    with pytest.raises(ScheduleError, match="reduces a contribution twice"):
        verify_allreduce(b.build_all())


def test_rejects_adding_different_elements() -> None:
    c = StepBuilder(2, 4)
    c.copy(0, Range(0, 2), Range(2, 4), step=c.step())  # rank 0: elements 2-3 hold inputs 0-1
    c.move(1, 0, Range(2, 4), reduce=True, step=c.step())
    with pytest.raises(ScheduleError, match="adds input element 2 to element 0"):
        verify_allreduce(c.build_all())


def test_rejects_reducing_into_an_element_without_input() -> None:
    problem = Problem(Topology.flat(2), 2, 4, "all_gather")  # rank 0 holds input in element 0 only
    b = StepBuilder(2, problem.space)
    b.move(1, 0, Range(1, 2), reduce=True, step=b.step())
    with pytest.raises(ScheduleError, match="holds no input yet"):
        verify(problem, b.build_all())


def test_rejects_incomplete_allreduce() -> None:
    b = StepBuilder(3, 4)
    b.move(1, 0, R, reduce=True, step=b.step())  # rank 2 never contributes
    st = b.step()
    b.move(0, 1, R, reduce=False, step=st)
    b.move(0, 2, R, reduce=False, step=st)
    with pytest.raises(ScheduleError, match="should hold element 0 of ranks \\[0, 1, 2\\]"):
        verify_allreduce(b.build_all())


def test_a_broken_ring_is_caught() -> None:
    """Drop one reduce-scatter step of a real ring: the verifier must notice."""
    good = get_algorithm("all_reduce", "ring").schedules(Problem(Topology.flat(4), 8, 4))
    broken = [Schedule(s.rank, s.world, s.space, s.steps[:1] + s.steps[2:]) for s in good]
    with pytest.raises(ScheduleError):
        verify_allreduce(broken)


def _overlap_pairwise(st: Step) -> bool:
    writes = [r.range for r in st.recvs] + [c.dst for c in st.copies]
    return any(s.range.overlaps(w) for s in st.sends for w in writes)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("src"), st.integers(0, 12), st.integers(1, 5)),
                min_size=1, max_size=9))
def test_the_sorted_sweep_finds_an_overlap_exactly_when_some_pair_overlaps(
        ops: list[tuple[str, int, int]]) -> None:
    """Many ranges in a step are checked by one sorted sweep (kernels/schedule.py): it must agree
    with comparing every send with every receive and copy destination."""
    rng = [Range(a, a + n) for _, a, n in ops]
    step = Step(sends=tuple(Send(1, r) for (k, _, _), r in zip(ops, rng) if k == "s"),
                recvs=tuple(Recv(1, r, False) for (k, _, _), r in zip(ops, rng) if k == "r"),
                copies=tuple(Copy(Range(20, 20 + r.size), r) for (k, _, _), r in zip(ops, rng)
                             if k == "c"))
    assert _sends_meet_writes(step) == _overlap_pairwise(step)
