"""Bytes on the wire equal each all_reduce algorithm's analytical value, derived here from first principles
(not from the schedule code)."""

from __future__ import annotations

import math

import pytest

from kernels.algorithm import Problem, get_algorithm
from kernels.bytecount import bytes_sent
from kernels.topology import Topology

ITEM = 4


def measured(name: str, p: int, count: int, rpn: int | None = None) -> tuple[int, int]:
    topo = Topology.blocks(p, rpn or p)
    sched = get_algorithm("all_reduce", name).schedules(Problem(topo, count, ITEM))
    sent = [bytes_sent(s, topo, ITEM) for s in sched]
    return max(b.total for b in sent), max(b.inter for b in sent)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 16])
def test_naive_root_sends_p_minus_1_buffers(p: int) -> None:
    n = 1000 * ITEM
    assert measured("naive", p, 1000)[0] == (p - 1) * n


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 16])
def test_ring_sends_2_p_minus_1_over_p(p: int) -> None:
    count = 240 * p  # divisible: exact
    assert measured("ring", p, count)[0] == 2 * (p - 1) * count * ITEM // p
    odd = 240 * p + 1  # chunk rounding: within one element per phase
    assert abs(measured("ring", p, odd)[0] - 2 * (p - 1) / p * odd * ITEM) <= 2 * ITEM


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 9, 16])
def test_tree_sends_one_buffer_up_and_one_per_child(p: int) -> None:
    n = 4096 * ITEM
    children = [sum(1 for c in (2 * v + 1, 2 * v + 2) if c < p) for v in range(p)]
    expect = max((v != 0) + children[v] for v in range(p)) * n if p > 1 else 0
    assert measured("tree", p, 4096)[0] == expect


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 12, 16])
def test_halving_doubling(p: int) -> None:
    pp = 2 ** int(math.log2(p))
    count = 64 * pp
    n = count * ITEM
    extra = n if p != pp else 0  # folding in, then sending back the result
    assert measured("halving_doubling", p, count)[0] == 2 * (pp - 1) * n // pp + extra


@pytest.mark.parametrize(("p", "rpn"), [(4, 2), (8, 2), (8, 4), (12, 3), (16, 4)])
def test_hierarchical_cuts_inter_node_bytes(p: int, rpn: int) -> None:
    nodes, count = p // rpn, 48 * p
    n = count * ITEM
    intra = 2 * (rpn - 1) * n // rpn
    inter = 2 * (nodes - 1) * (n // rpn) // nodes
    total, inter_max = measured("hierarchical", p, count, rpn)
    assert (total, inter_max) == (intra + inter, inter)
    _, ring_inter = measured("ring", p, count, rpn)
    assert ring_inter == 2 * (p - 1) * n // p  # the ring's node-crossing ranks carry it all
    assert inter_max < ring_inter
