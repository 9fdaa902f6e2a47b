"""Emulated links (bench/emulate): delays equal to the cost model's, the sends that wait and in
which order, the scenario key's errors, and emulated records — exact quantities, never timing."""

from __future__ import annotations

import json

import pytest

from bench.collective.scenario import ScenarioError, parse_scenario
from bench.costmodel.profile import Link, Profile, ProfileError, Slow, from_mapping
from bench.emulate.links import EmulationError, link_delay
from bench.emulate.steps import Release, rank_delays, releases, sends_of
from kernels.algorithm import Problem, get_algorithm
from tests.conftest import ROOT, commbench, run_mpi

A_I, B_I, A_X, B_X = 1e-6, 1e9, 1e-5, 1e8  # intra (the host's link), inter


def profile(nics: int = 1, slow: tuple[Slow, ...] = ()) -> Profile:
    return Profile("t", "", "test", {"intra": Link(A_I, B_I), "inter": Link(A_X, B_X)},
                   nics_per_node=nics, slow=slow)


def host(b: float) -> float:
    return A_I + b / B_I


def test_delay_is_the_model_beyond_the_host_link() -> None:
    links = link_delay(profile(), "2x2", 4)
    assert links.delay_s(0, 1, 1000) == 0.0  # intra: the host's own link
    assert links.delay_s(0, 2, 1000) == pytest.approx(A_X + 1000 / B_X - host(1000), rel=1e-12)
    assert links.delay_s(3, 0, 1000, flows=3) == pytest.approx(A_X + 3000 / B_X - host(1000),
                                                                rel=1e-12)
    assert links.delay_s(0, 2, 0) == pytest.approx(A_X - A_I, rel=1e-12)
    fast = Profile("f", "", "", {"intra": Link(1e-3, 1e6), "inter": Link(1e-6, 1e9)})
    assert link_delay(fast, "2x2", 4).delay_s(0, 2, 10) == 0.0  # never negative


def test_step_delays_share_nics_as_the_cost_model() -> None:
    # both ranks of node 0 send to node 1 in one step: one NIC per node halves the rate
    one = link_delay(profile(nics=1), "2x2", 4).step_delays([0, 1, 2], [2, 3, 3], [800, 800, 0])
    assert one[0] == pytest.approx(A_X + 1600 / B_X - host(800), rel=1e-12)
    assert one[1] == one[0] and one[2] == 0.0  # an empty message costs nothing
    # one NIC per rank: each flow has its own
    two = link_delay(profile(nics=2), "2x2", 4).step_delays([0, 1], [2, 3], [800, 800])
    assert list(two) == pytest.approx([A_X + 800 / B_X - host(800)] * 2, rel=1e-12)
    # intra messages of the step do not take NIC bandwidth
    mixed = link_delay(profile(nics=1), "2x2", 4).step_delays([0, 1], [2, 0], [800, 800])
    assert mixed[0] == pytest.approx(A_X + 800 / B_X - host(800), rel=1e-12) and mixed[1] == 0.0


def test_slow_node_and_link() -> None:
    links = link_delay(profile(slow=(Slow(3.0, node=1), Slow(2.0, link=(0, 1)))), "2x2", 4)
    assert links.delay_s(0, 2, 100) == pytest.approx(3 * (A_X + 100 / B_X) - host(100), rel=1e-12)
    assert links.delay_s(2, 3, 100) == pytest.approx(2 * host(100), rel=1e-12)  # slow node, intra
    assert links.delay_s(1, 0, 100) == pytest.approx(host(100), rel=1e-12)  # slow link, x2
    assert links.describe()["emulation"]["slow"] == [{"node": 1, "factor": 3.0},
                                                     {"link": [0, 1], "factor": 2.0}]
    with pytest.raises(EmulationError, match=r"slow\[0\]\.node: 2 is outside the 2 nodes"):
        link_delay(profile(slow=(Slow(2.0, node=2),)), "2x2", 4)


@pytest.mark.parametrize("raw, key", [
    ([{"node": 1}], r"slow\.0\.factor: Field required"),
    ([{"factor": 2}], r"slow\.0: expected \{node: N, factor: F\} or \{link: \[A, B\], factor: F\}"),
    ([{"node": 1, "factor": 0.5}], r"slow\.0\.factor: Input should be greater than or equal to 1"),
    ([{"link": [1, 1], "factor": 2}], r"slow\.0: link: expected two different ranks"),
    ([{"node": -1, "factor": 2}], r"slow\.0\.node: Input should be greater than or equal to 0"),
    ({"node": 1}, "slow: Input should be a valid list"),
])
def test_bad_slow_key_is_one_line(raw: object, key: str) -> None:
    doc = {"links": {"intra": {"alpha_s": 1e-6, "beta_bytes_per_s": 1e9}}, "slow": raw}
    with pytest.raises(ProfileError, match=key) as e:
        from_mapping(doc, "p.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("p.yaml: ")


def test_slow_round_trips_through_yaml() -> None:
    prof = profile(slow=(Slow(4.0, node=2),))
    assert from_mapping(prof.as_yaml(), "x").slow == prof.slow


def schedules(alg: str, spec: str, count: int = 1024) -> tuple[list, object]:
    links = link_delay(profile(), spec, 4)
    problem = Problem(links.placed.topology, count, 4)
    return [sends_of(s, 4) for s in get_algorithm("all_reduce", alg).schedules(problem)], links


def test_ring_delays_exactly_the_inter_node_sends() -> None:
    everyone, links = schedules("ring", "2x2")
    d = A_X + 1024 / B_X - host(1024)  # 256 floats per step, one flow per node
    for r in range(4):
        got = rank_delays(links, everyone, r)
        assert len(got) == 6 and all(len(x) == 1 for x in got)
        assert [x[0] for x in got] == pytest.approx([d if r in (1, 3) else 0.0] * 6, rel=1e-12)


def test_hierarchical_delays_its_two_inter_steps_with_a_shared_nic() -> None:
    everyone, links = schedules("hierarchical", "2x2")
    d = A_X + 2048 / B_X - host(1024)  # 256 floats, the node's two ranks on one NIC
    for r in range(4):
        got = rank_delays(links, everyone, r)
        assert [bool(x and x[0]) for x in got] == [False, True, True, False]
        assert [x[0] for x in got if x and x[0]] == pytest.approx([d, d], rel=1e-12)


def test_releases_keep_order_per_peer() -> None:
    assert releases([2, 1, 2, 3], [0.5, 0.0, 0.1, 0.5]) == [
        Release(0.0, (1,)), Release(0.5, (0, 2, 3))]
    assert releases([1, 2], [0.0, 0.0]) == [Release(0.0, (0, 1))]
    assert releases([], []) == []


@pytest.mark.mpi
def test_emulated_plan_under_mpiexec() -> None:
    res = run_mpi(4, ROOT / "tests" / "mpi" / "emulate_plan.py")
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["errors"] == []
    assert out["wrong"] == {"ring": 0, "hierarchical": 0, "halving_doubling": 0}
    assert [len(w["ring"]) for w in out["waits"]] == [0, 6, 0, 6]
    assert [len(w["hierarchical"]) for w in out["waits"]] == [2, 2, 2, 2]


BASE = {"name": "e", "sizes": [4096], "world_sizes": [4],
        "emulate": {"profile": "emulated-slow", "topology": "2x2"}}


@pytest.mark.parametrize("change, message", [
    ({"world_sizes": [8]}, "world_sizes: topology '2x2' holds 4 ranks; world size 8 does not fit"),
    ({"world_sizes": [3]}, "world_sizes: topology '2x2': world size 3 lands on nodes of 2,1"),
    ({"world_sizes": []}, "world_sizes: emulate needs world sizes"),
    ({"transports": ["torch"]}, "transports: torch cannot be emulated"),
    ({"ranks_per_node": [2]}, "ranks_per_node: with emulate the nodes are the topology's"),
    ({"emulate": {"profile": "emulated-slow", "topology": "2y2"}}, "emulate: topology '2y2'"),
    ({"emulate": {"profile": "nope", "topology": "2x2"}}, "emulate: profile: unknown profile 'nope'"),
    ({"emulate": {"profile": "emulated-slow", "topology": "2x2", "x": 1}}, "emulate.x: unknown key"),
])
def test_scenario_errors_are_one_line(change: dict, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**BASE, **change}, "s.yaml")
    assert str(e.value).startswith(f"s.yaml: {message}"), str(e.value)
    assert "\n" not in str(e.value)


def test_missing_link_class_exits_2(tmp_path) -> None:
    prof = tmp_path / "intra.yaml"
    prof.write_text("links:\n  intra: {alpha_s: 1.0e-6, beta_bytes_per_s: 1.0e+9}\n")
    sc = tmp_path / "s.yaml"
    sc.write_text(f"name: s\nsizes: [4096]\nworld_sizes: [4]\n"
                  f"emulate: {{profile: {prof}, topology: 2x2}}\n")
    res = commbench("run", str(sc), "--out", str(tmp_path / "run"))
    assert res.returncode == 2
    assert res.stderr.strip() == (f"commbench: {sc}: emulate: {prof}: no link class 'inter' in "
                                  f"links (the topology uses it; has: intra)")


@pytest.mark.mpi
@pytest.mark.slow
def test_emulated_run_records(tmp_path) -> None:
    sc = tmp_path / "e.yaml"
    sc.write_text("name: e\nsizes: [4KiB]\nworld_sizes: [4]\n"
                  "emulate: {profile: emulated-slow, topology: 2x2}\n"
                  "algorithms: [native, ring, hierarchical]\n"
                  "timing: {warmup: 1, iters: 2, repetitions: 1}\n")
    out = tmp_path / "run"
    res = commbench("run", str(sc), "--out", str(out), "--no-report")
    assert res.returncode == 0, res.stderr[-2000:]
    assert ("# note: all_reduce native: left out of the emulated run (a vendor call's messages "
            "cannot be delayed)") in res.stdout
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["algorithm"] for r in recs] == ["ring", "hierarchical"]
    for r in recs:
        assert r["emulated"] is True and r["wrong"] == 0
        assert (r["ranks_per_node"], r["nodes"]) == (2, 2)
        assert r["profile"]["name"] == "emulated-slow"
        assert r["emulation"]["topology"] == "2x2" and r["emulation"]["delayed"] == ["inter"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scenario"]["emulate"] == {"profile": "emulated-slow", "topology": "2x2"}
