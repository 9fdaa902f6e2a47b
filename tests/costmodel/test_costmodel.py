"""The cost model: hand-computed times, its event-driven semantics, the evaluator (on real and
symbolic schedules) against the plain reference (tests/helpers/costref.py), and every closed
form an algorithm declares against the evaluator (p <= 128; flat, two-level and three-level
topologies). Exact quantities only."""

from __future__ import annotations

import math
import re
from dataclasses import fields, replace

import numpy as np
import pytest

from bench.costmodel.evaluate import schedule_estimate
from bench.costmodel.model import Cluster, TopologyError, parse_topology
from bench.costmodel.net import Net
from bench.costmodel.predict import Job, plan_case
from bench.costmodel.profile import Link, Profile, ProfileError, load_profile, presets
from kernels import collective as coll
from kernels.algorithm import Algorithm, Problem, algorithms_of, get_algorithm
from kernels.closed import Ctx, Estimate
from kernels.compiled import Compiled, compile_schedules
from kernels.schedule import Range, StepBuilder
from tests.helpers import costref as cost

# o = 0.5 us, alpha 1 us / 5 us, beta 1 GB/s / 0.1 GB/s, gamma 0.1 ns per byte, one NIC.
PROF = Profile("t", "", "test", {"intra": Link(1e-6, 1e9), "inter": Link(5e-6, 1e8),
                                 "spine": Link(8e-6, 1e8)}, gamma=1e-10, overhead=5e-7)
US = 1e-6
HOT = replace(PROF, hot=1e-10)  # + 0.1 ns per sent byte its sender wrote earlier in the call


def _net(spec: str, p: int | None = None, prof: Profile = PROF) -> Net:
    cl = parse_topology(spec)
    return Net(cl.place(p or cl.world), prof)


def _ref(c: str, a: str, spec: str, count: int, p: int | None = None,
         prof: Profile = PROF) -> Estimate:
    net = _net(spec, p, prof)
    pr = Problem(net.placed.topology, count, 4, c, 0)
    return cost.evaluate(get_algorithm(c, a).schedules(pr), net, 4)


# --- hand-computed (float32; B = bytes of one message) ---------------------------------------

def test_ring_flat_and_two_level() -> None:
    # p=4, n=4000: B = 4000 B. Intra step: .5 + 1 + 4 = 5.5 us, +0.4 us reduction in 3 RS steps.
    assert _ref("all_reduce", "ring", "1x4", 4000).time_s == pytest.approx(6 * 5.5 * US + 1.2 * US)
    # 2x2: the node-crossing hop .5 + 5 + 4000 / 1e8 s = 45.5 us sets every step's pace.
    assert _ref("all_reduce", "ring", "2x2", 4000).time_s == pytest.approx(
        (6 * 45.5 + 1.2) * US)


def test_hot_sends_pay_for_what_their_sender_wrote() -> None:
    # ring 1x4, n = 4000: every step after the first sends the 4000 B block reduced or received
    # the step before: 5 x 0.4 us.
    assert _ref("all_reduce", "ring", "1x4", 4000, prof=HOT).time_s == pytest.approx(
        (6 * 5.5 + 1.2 + 5 * 0.4) * US)
    # binomial broadcast 1x4 of 4000 B: 0 -> 2 (5.5 us), then 0 -> 1 (its own data: clean) and
    # 2 -> 3 (what 2 received: + 0.4 us) at once.
    assert _ref("broadcast", "binomial", "1x4", 1000, prof=HOT).time_s == pytest.approx(
        (5.5 + 5.9) * US)
    # all_gather ring 1x2: one step, each rank sends its own block: nothing hot.
    assert _ref("all_gather", "ring", "1x2", 2000, prof=HOT).time_s == pytest.approx(
        _ref("all_gather", "ring", "1x2", 2000).time_s)


def test_tree_flat_and_two_level() -> None:
    # p=3 heap tree, one chunk of 4000 B: 1 -> 0 (5.5 + .4 reduce), 2 -> 0 next step (siblings
    # never reduce the same chunk at once), then 0 sends to 1 and 2 at once: its port shared by
    # two flows (8 us each) and the second posted after the first (o twice): 2o + 1 + 8 = 10 us.
    assert _ref("all_reduce", "tree", "1x3", 1000).time_s == pytest.approx((5.9 + 5.9 + 10) * US)
    # nodes {0, 1} and {2}: 2 -> 0 crosses: .5 + 5 + 40 = 45.5 us; rank 0 then sends to 1 inside
    # (5.5 us) and to 2 across, posted second: 1 + 5 + 40 = 46 us.
    assert _ref("all_reduce", "tree", "2,1", 1000).time_s == pytest.approx(
        (5.9 + 45.9 + 46) * US)


def test_recursive_doubling_flat_and_two_level() -> None:
    # all_gather p=4, 1000 elements per block: d=1 sends B, d=2 sends 2B.
    assert _ref("all_gather", "recursive_doubling", "1x4", 4000).time_s == pytest.approx(
        (5.5 + 9.5) * US)
    # 2x2: d=2 crosses with both ranks of a node on its one NIC: 8000 B at 0.05 GB/s = 160 us.
    assert _ref("all_gather", "recursive_doubling", "2x2", 4000).time_s == pytest.approx(
        (5.5 + 165.5) * US)


def test_hierarchical_flat_and_two_level() -> None:
    # 2x2, n = 4000: intra RS of 2000 elements (9.5 + .8), inter RS of 1000 with two flows on
    # the node's NIC (.5 + 5 + 80 + .4), inter AG (85.5), intra AG (9.5).
    assert _ref("all_reduce", "hierarchical", "2x2", 4000).time_s == pytest.approx(
        (10.3 + 85.9 + 85.5 + 9.5) * US)
    assert _ref("all_reduce", "hierarchical", "1x4", 4000).time_s == pytest.approx(
        _ref("all_reduce", "ring", "1x4", 4000).time_s)


def test_ranks_wait_only_for_what_they_receive() -> None:
    """Not a barrier per step: 2 -> 3 sends twice while 0 -> 1 sends once, bigger."""
    b = StepBuilder(4, 10000)
    st = b.step()
    b.move(0, 1, Range(0, 10000), reduce=False, step=st)
    b.move(2, 3, Range(0, 100), reduce=False, step=st)
    b.move(2, 3, Range(100, 200), reduce=False, step=b.step())
    e = cost.evaluate(b.build_all(), _net("1x4"), 1)
    big, small = 1.5 * US + 10000 / 1e9, 1.5 * US + 100 / 1e9
    assert e.time_s == pytest.approx(max(big, 2 * small))
    assert e.steps == 2 and e.bytes_sent_max == 10000 and e.bytes_inter_max == 0


# --- evaluators agree ------------------------------------------------------------------------

SMALL = [("1x6", 6), ("3x4", 12), ("8,8,4", 20), ("4x4:cyclic", 10), ("8x2:leaf=2:oversub=2", 16)]


@pytest.mark.parametrize(("spec", "p"), SMALL)
def test_vectorised_and_symbolic_equal_reference(spec: str, p: int) -> None:
    net = _net(spec, p, replace(load_profile("h100-ib400"), hot=2e-12))
    for c in coll.names():
        spec_c = coll.resolve(c)
        for a in (a for a in algorithms_of(c) if not a.is_vendor):
            for n in (1, 5, 1000, 300001):
                pr = Problem(net.placed.topology, spec_c.round_count(
                    n * p if spec_c.divides else n, p), 4, c, 0)
                try:
                    sch = a.schedules(pr)
                except ValueError:
                    continue  # the algorithm refuses this topology
                ref = cost.evaluate(sch, net, 4)
                got = schedule_estimate(a, pr, net)
                assert got.time_s == pytest.approx(ref.time_s, rel=1e-12), (c, a.name, n)
                assert (got.bytes_sent_max, got.bytes_inter_max, got.steps) == (
                    ref.bytes_sent_max, ref.bytes_inter_max, ref.steps), (c, a.name, n)


def _generated() -> list[Algorithm]:
    """Every registered algorithm whose symbolic build is also generated (discovered: no list)."""
    return [a for c in coll.names() for a in algorithms_of(c)
            if a.shape is not None and a.shape.generate is not None]


@pytest.mark.parametrize(("spec", "p"), [*SMALL, ("2,1,1,2,1,2", 9)])
def test_generated_symbolic_builds_equal_the_compiled_build(spec: str, p: int) -> None:
    """A shape's numpy generator is its build compiled without hot bytes, array by array (the
    evaluator then prices both alike); compiling without hot bytes changes nothing else."""
    net = _net(spec, p, load_profile("h100-ib400"))
    assert _generated() and not net.hot  # no hot sends: schedule_estimate takes the generator
    for a in _generated():
        assert a.shape is not None and a.shape.generate is not None
        sym = Problem(net.placed.topology, a.shape.count(Problem(net.placed.topology, p, 4,
                                                                 a.collective, 0)), 1,
                      a.collective, p - 1)  # a rooted collective's order turns with its root
        try:
            built = a.schedules(sym)
        except ValueError as e:  # the algorithm needs other nodes: so does its generator
            with pytest.raises(ValueError, match=re.escape(str(e))):
                a.shape.generate(sym)
            continue
        ref, hot = compile_schedules(built, sym.count, hot=False), compile_schedules(built, sym.count)
        got = a.shape.generate(sym)
        assert (got.world, got.k, len(got.steps)) == (ref.world, ref.k, len(ref.steps))
        for g, r, h in zip(got.steps, ref.steps, hot.steps):
            for f in fields(r):
                same = getattr(r, f.name), getattr(g, f.name)
                assert same[0].dtype == same[1].dtype and np.array_equal(*same), (a.name, f.name)
                if not f.name.startswith("hot_"):
                    assert np.array_equal(getattr(h, f.name), same[0]), (a.name, f.name)
        for n in (300001,):  # uneven pieces: the evaluator on the generated build
            pr = Problem(net.placed.topology, coll.resolve(a.collective).round_count(n * p, p), 4,
                         a.collective, 0)
            assert schedule_estimate(a, pr, net).time_s == pytest.approx(
                cost.evaluate(a.schedules(pr), net, 4).time_s, rel=1e-12), (a.name, n)


# --- closed forms against the schedule-evaluated model, p <= 128 ---------------------------

TOPOLOGIES = [("1x16", 16), ("4x2:leaf=1", 8), ("4x4", 16), ("16x1", 16), ("2x8", 16),
              ("8x2:leaf=2:oversub=2", 16), ("8x4:leaf=4:oversub=3", 32), ("3x4", 12),
              ("8,8,4", 20), ("4x4:cyclic", 12), ("16x8", 128), ("32x4:leaf=8:oversub=2", 128)]


def _with_closed_form() -> list[Algorithm]:
    """Every registered algorithm that declares a closed form (discovered: no list)."""
    return [a for c in coll.names() for a in algorithms_of(c) if a.closed is not None]


def _closed(alg: Algorithm, pr: Problem, net: Net) -> Estimate | str:
    assert alg.closed is not None
    got = alg.closed(Ctx(pr, net))
    return Job(got).run(pr, net) if isinstance(got, Compiled) else got


@pytest.mark.slow  # make test only: every closed form against its schedule
@pytest.mark.parametrize("key", [f"{a.collective}/{a.name}" for a in _with_closed_form()])
def test_closed_form_equals_schedule_model(key: str) -> None:
    c, a = key.split("/")
    alg, spec = get_algorithm(c, a), coll.resolve(c)
    applied = 0
    for topo, p in TOPOLOGIES:
        net = _net(topo, p, load_profile("pcie-100gbe"))
        for n in ((1 << 14, 1 << 21) if p > 32 else (1, 7, 1000, 1 << 16, 1 << 21)):
            count = spec.round_count(n * p if spec.divides else n, p)
            pr = Problem(net.placed.topology, count, 4, c, 0)
            got = _closed(alg, pr, net)
            if isinstance(got, str):
                continue
            applied += 1
            ref = schedule_estimate(alg, pr, net)
            assert got.time_s == pytest.approx(ref.time_s, rel=1e-9), (topo, n)
            assert (got.bytes_sent_max, got.bytes_inter_max, got.steps) == (
                ref.bytes_sent_max, ref.bytes_inter_max, ref.steps), (topo, n)
    assert applied >= 10  # the closed form covers flat and multi-level cases, not only p = 1


def test_closed_forms_cover_the_common_case_at_scale() -> None:
    """At 4096 ranks on 512 nodes of 8, every algorithm's closed form prices a power-of-two
    size directly, and every algorithm of the suite declares one."""
    net = _net("512x8", 4096, load_profile("h100-ib400"))
    algs = _with_closed_form()
    assert {(a.collective, a.name) for a in algs} == {
        (a.collective, a.name) for c in coll.names() for a in algorithms_of(c)
        if not a.is_vendor and a.build.__module__.startswith("kernels.algorithms.")}
    for alg in algs:
        pr = Problem(net.placed.topology, 1 << 22, 4, alg.collective, 0)
        got = _closed(alg, pr, net)
        assert not isinstance(got, str), (alg.collective, alg.name, got)
        assert math.isfinite(got.time_s) and got.time_s > 0


def test_hot_sends_are_priced_by_the_evaluator_alone() -> None:
    """A profile with hot sends skips the closed forms: small p goes to the evaluator, which
    prices them; at 4096 ranks the case says why it is not predicted."""
    alg = get_algorithm("all_reduce", "ring")
    small = _net("1x4", prof=HOT)
    pr = Problem(small.placed.topology, 4000, 4, "all_reduce", 0)
    job = plan_case(alg, pr, small)
    assert isinstance(job, Job) and job.method == "schedule"
    assert job.run(pr, small).time_s == pytest.approx(cost.evaluate(
        alg.schedules(pr), small, 4).time_s, rel=1e-12)
    big = _net("512x8", 4096, replace(load_profile("h100-ib400"), hot=1e-11))
    why = plan_case(alg, Problem(big.placed.topology, 1 << 22, 4, "all_reduce", 0), big)
    assert isinstance(why, str) and "hot sends" in why and "p = 256" in why


# --- topology and profiles -------------------------------------------------------------------

def test_topology_specs() -> None:
    assert parse_topology("64x8").place(16).node_of == tuple(r // 8 for r in range(16))
    assert parse_topology("4x2:cyclic").place(6).node_of == (0, 1, 2, 3, 0, 1)
    pl = parse_topology("8,8,4:leaf=2:oversub=2:nics=4").place(20)
    assert pl.node_sizes == (8, 8, 4) and pl.leaf_of == (0, 0, 1) and pl.nics_per_node == 4
    big = parse_topology("2x4").place(12)
    assert big.scaled_out and big.node_sizes == (4, 4, 4)
    assert parse_topology("2x4").place(4).classes_used() == ["intra"]
    assert parse_topology("4x1:leaf=2").place(4).classes_used() == ["inter", "spine"]


@pytest.mark.parametrize("spec", ["", "8x", "0x8", "4x4:leaf=0", "4x4:oversub=0.5", "4x4:bogus",
                                  "4x4:nics=x", "8,0,4"])
def test_bad_topology_is_one_line(spec: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_topology(spec)
    assert "\n" not in str(e.value) and "topology" in str(e.value)


def test_presets_and_missing_link_class(tmp_path) -> None:
    assert {"h100-ib400", "a100-ib200", "pcie-100gbe", "cpu-25gbe"} <= set(presets())
    for name in presets():
        prof = load_profile(name)
        assert {"intra", "inter", "spine"} <= set(prof.links) and prof.source
    f = tmp_path / "one.yaml"
    f.write_text("name: one\nlinks:\n  intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 1.0e+9}\n")
    prof = load_profile(f)
    Net(Cluster((4,)).place(4), prof)  # one node: intra only, fine
    with pytest.raises(ProfileError) as e:
        Net(Cluster((4, 4)).place(8), prof)
    assert str(f) in str(e.value) and "'inter'" in str(e.value) and "\n" not in str(e.value)
    f.write_text("links:\n  intra: {alpha_s: -1, beta_bytes_per_s: 1}\n")
    with pytest.raises(ProfileError, match=r"intra\.alpha_s"):
        load_profile(f)
    f.write_text("links:\n  intra: {alpha_s: 1, beta_bytes_per_s: 1}\n"
                 "device: {copy_bandwidth_curve: [[2, 1], [1, 1]]}\n")
    with pytest.raises(ProfileError, match=r"copy_bandwidth_curve: sizes must increase"):
        load_profile(f)
    f.write_text("links:\n  intra: {alpha_s: 1, beta_bytes_per_s: 1}\n"
                 "device: {overlaps_communication: 0}\n")
    with pytest.raises(ProfileError,
                       match=r"device\.overlaps_communication: Input should be a valid boolean"):
        load_profile(f)


def test_copies_follow_the_profile_copy_curve() -> None:
    """2n / bandwidth at n: 256 KiB at 60 GB/s, 16 MiB at 24 GB/s, log-log between, flat
    beyond; without a curve, the memory bandwidth."""
    dev = {"memory_bandwidth_bytes_per_s": 24e9,
           "copy_bandwidth_curve": [[256 << 10, 60e9], [16 << 20, 24e9]]}
    net = _net("1x2", prof=replace(PROF, device=dev))
    assert net.copy_time(256 << 10) == pytest.approx(2 * (256 << 10) / 60e9)
    assert net.copy_time(64 << 10) == pytest.approx(2 * (64 << 10) / 60e9)
    assert net.copy_time(64 << 20) == pytest.approx(2 * (64 << 20) / 24e9)
    mid = 2 << 20  # halfway in log size: the geometric mean of the two bandwidths
    assert net.copy_time(mid) == pytest.approx(2 * mid / math.sqrt(60e9 * 24e9))
    flat = _net("1x2", prof=replace(PROF, device={"memory_bandwidth_bytes_per_s": 24e9}))
    assert flat.copy_time(mid) == pytest.approx(2 * mid / 24e9)
