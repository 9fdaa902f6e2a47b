"""NCCL's own algorithms as schedules: the shapes that make them what they are, counted exactly
on the built schedules (every algorithm is also proven by tests/kernels/test_algorithms.py at
p = 1..64 and priced against its closed form by tests/costmodel/test_costmodel.py).

- ``ring_channels``: k channels, each leaving every node from a different rank, all in the same
  steps; priced as concurrent flows (hand-computed on 2 nodes x 2 ranks with 2 NICs a node);
- ``double_tree``: two binary trees, no rank an inner node of both;
- ``pat``: ceil(log2 p) steps, all_gather farthest distance first, reduce_scatter nearest first.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.costmodel.model import parse_topology
from bench.costmodel.net import Net
from bench.costmodel.profile import Link, Profile
from kernels.algorithm import Problem, get_algorithm
from kernels.algorithms.all_reduce.double_tree import num_chunks, parents
from kernels.bytecount import bytes_sent
from kernels.closed import Ctx
from kernels.rings import channel_ring, channels
from kernels.topology import Topology
from tests.helpers import costref as cost

# o = 0.5 us, alpha 1 us / 5 us, beta 1 GB/s / 0.1 GB/s per NIC, gamma 0.1 ns per byte.
PROF = Profile("t", "", "test", {"intra": Link(1e-6, 1e9), "inter": Link(5e-6, 1e8),
                                 "spine": Link(8e-6, 1e8)}, gamma=1e-10, overhead=5e-7)
US = 1e-6
CHANNELED = ("all_reduce", "all_gather", "reduce_scatter")


def test_channel_count_and_ring_order() -> None:
    assert channels([8]) == 1  # one node: nothing to spread over
    assert channels([4, 4, 4]) == 4 and channels([3, 2]) == 3 and channels([16, 16]) == 8
    nodes = [[0, 1, 2], [3, 4, 5]]
    assert channel_ring(nodes, 0) == [1, 2, 0, 4, 5, 3]  # leaves each node from local index 0
    assert channel_ring(nodes, 2) == [0, 1, 2, 3, 4, 5]
    assert channel_ring([[0, 1], [2]], 1) == [0, 1, 2]  # local index 1 mod 1 on the small node


@pytest.mark.parametrize("collective", CHANNELED)
@pytest.mark.parametrize("rpn", [2, 4, 8])
def test_every_rank_carries_one_channel_across_nodes_each_step(collective: str, rpn: int) -> None:
    """Equal nodes of l <= 8 ranks: k = l channels, so in every step every rank sends k
    messages, exactly one of them to another node: the node's k crossing flows use k NICs."""
    p = 4 * rpn
    topo = Topology.blocks(p, rpn)
    pr = Problem(topo, 64 * p, 4, collective)
    for sch in get_algorithm(collective, "ring_channels").schedules(pr):
        for st in sch.steps:
            assert len(st.sends) == rpn
            assert sum(not topo.same_node(sch.rank, s.peer) for s in st.sends) == 1


def _net(spec: str) -> Net:
    cl = parse_topology(spec)
    return Net(cl.place(cl.world), PROF)


@pytest.mark.parametrize(("collective", "alg", "want_us"), [
    # one 4000 B message a step crosses on one NIC: .5 + 5 + 40 us, 3 steps
    ("all_gather", "ring", 3 * 45.5),
    # two 2000 B pieces a step, one across on each rank's own NIC: local index 0 sends
    # channel 0 across (j = 1), local index 1 channel 1 (posted second, j = 2): 1 + 5 + 20 us
    ("all_gather", "ring_channels", 3 * 26),
    # 2 x 3 steps of the same messages; each reduce-scatter step reduces 4000 B: + .4 us
    ("all_reduce", "ring", 6 * 45.5 + 3 * 0.4),
    ("all_reduce", "ring_channels", 6 * 26 + 3 * 0.4),
])
def test_channels_priced_as_concurrent_flows(collective: str, alg: str, want_us: float) -> None:
    net = _net("2x2:nics=2")
    a = get_algorithm(collective, alg)
    pr = Problem(net.placed.topology, 4000, 4, collective)
    assert cost.evaluate(a.schedules(pr), net, 4).time_s == pytest.approx(want_us * US)
    assert a.closed is not None
    assert a.closed(Ctx(pr, net)).time_s == pytest.approx(want_us * US)


@pytest.mark.parametrize("m", range(1, 65))
def test_double_tree_no_rank_is_inner_in_both_trees(m: int) -> None:
    inner = []
    for par in parents(m):
        assert (par < 0).sum() == 1
        kids = np.bincount(par[par >= 0], minlength=m)
        assert kids.max(initial=0) <= 2
        for v in range(m):  # every position reaches the root: a tree, no cycle
            hops = 0
            while par[v] >= 0:
                v, hops = par[v], hops + 1
                assert hops < m
        inner.append(set(np.flatnonzero(kids).tolist()))
    assert not inner[0] & inner[1]


@pytest.mark.parametrize("p", [2, 3, 6, 7, 16])
def test_double_tree_sends_half_the_buffer_per_tree_edge(p: int) -> None:
    """n/2 to each parent (a root has none) and n/2 to each child, per tree."""
    pr = Problem(Topology.blocks(p, 1), 1000, 4)
    assert num_chunks(1000, 4) == 1
    sent = np.zeros(p, dtype=np.int64)
    for par in parents(p):
        sent += np.where(par >= 0, 500, 0) + 500 * np.bincount(par[par >= 0], minlength=p)
    got = [bytes_sent(s, pr.topology, 1).total for s in
           get_algorithm("all_reduce", "double_tree").schedules(pr)]
    assert got == sent.tolist()


@pytest.mark.parametrize("collective", ["all_gather", "reduce_scatter"])
@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 16, 17])
def test_pat_steps_and_distances(collective: str, p: int) -> None:
    """ceil(log2 p) steps; in each every rank sends to the rank 2^d away (all_gather: d from
    the top down, to i - 2^d; reduce_scatter: d upwards, to i + 2^d), one block per message,
    as many as the offsets below p that step passes."""
    pr = Problem(Topology.flat(p), 3 * p, 4, collective)
    dims = list(range((p - 1).bit_length()))
    order = dims[::-1] if collective == "all_gather" else dims
    sign = -1 if collective == "all_gather" else 1
    for sch in get_algorithm(collective, "pat").schedules(pr):
        assert len(sch.steps) == len(dims)
        for d, st in zip(order, sch.steps):
            assert {s.peer for s in st.sends} == {(sch.rank + sign * (1 << d)) % p}
            assert [s.range.size for s in st.sends] == [3] * len(range(0, p - (1 << d), 2 << d))
