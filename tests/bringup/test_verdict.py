"""The bring-up verdict on recorded data: which host or link it names, and why (exact decisions
on fixed records; the stages' rounds)."""

from __future__ import annotations

import itertools
from typing import Any

from bench.bringup import stages
from bench.bringup.verdict import FAILED, OK, SLOW, judge, suspects

HOSTS = [f"h{i}" for i in range(4)]


def rec(stage: str, hosts: list[str], busbw: float, algorithm: str = "ring",
        nbytes: int = 4 << 20, status: str = "ok", **kw: Any) -> dict[str, Any]:
    return {"stage": stage, "group_hosts": hosts, "collective": "all_reduce",
            "algorithm": algorithm, "nbytes": nbytes, "busbw_gbps": busbw, "status": status,
            **kw}


def run(host: dict[str, float] | None = None, pair: dict[tuple[str, str], float] | None = None,
        extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    out = []
    for h in HOSTS:
        for alg in ("ring", "native"):
            out.append(rec("host", [h], (host or {}).get(h, 10.0), alg))
            out.append(rec("host", [h], 0.01, alg, nbytes=1024))  # small sizes: not judged
    for a, b in itertools.combinations(HOSTS, 2):
        for alg in ("ring", "native"):
            out.append(rec("pairs", [a, b], (pair or {}).get((a, b), 2.0), alg))
    return out + (extra or [])


def test_all_alike_is_ok() -> None:
    v = judge(run(), 25)
    assert v.ok and v.bad_hosts() == [] and v.bad_links() == []
    assert len(v.links) == 6 and v.lines() == ["every host (4) and link (6) ok"]


def test_a_host_whose_every_pair_is_slow_is_named_not_its_links() -> None:
    slow = {p: 0.5 for p in itertools.combinations(HOSTS, 2) if "h3" in p}
    v = judge(run(pair=slow), 25)
    assert v.bad_hosts() == ["h3"] and v.bad_links() == []
    w = v.worst(v.hosts["h3"])
    assert w is not None and (w.status, w.stage, round(w.by_pct)) == (SLOW, "pairs", 75)
    assert all("h3" not in link for link in v.links)  # its links are its own fault


def test_a_slow_link_between_good_hosts_is_named() -> None:
    v = judge(run(pair={("h0", "h2"): 1.0}), 25)
    assert v.bad_hosts() == [] and v.bad_links() == ["h0 -- h2"]
    assert v.worst(v.links["h0 -- h2"]).by_pct == 50.0  # type: ignore[union-attr]


def test_a_starved_host_is_named_in_the_host_stage() -> None:
    v = judge(run(host={"h1": 3.0}), 25)
    assert v.bad_hosts() == ["h1"]
    w = v.worst(v.hosts["h1"])
    assert w is not None and (w.stage, round(w.by_pct)) == ("host", 70)
    assert v.lines()[0].startswith("host h1: slow by 70 % (host stage: all_reduce")


def test_a_host_stalled_in_some_iterations_is_judged_at_its_mean_time() -> None:
    # h2's median is its peers', its mean three times it: one iteration in a few stalled
    times = {"time_us_median": 100.0, "time_us_mean": 100.0}
    recs = [{**r, **times} for r in run()]
    recs = [{**r, "time_us_mean": 300.0} if r["group_hosts"] == ["h2"] else r for r in recs]
    v = judge(recs, 25)
    assert v.bad_hosts() == ["h2"]
    w = v.worst(v.hosts["h2"])
    assert w is not None and (w.stage, round(w.by_pct)) == ("host", 67)


def test_within_the_threshold_is_ok() -> None:
    assert judge(run(host={"h1": 7.6}), 25).ok  # 24 % below: ok at 25
    assert not judge(run(host={"h1": 7.4}), 25).ok  # 26 % below


def test_a_wrong_case_at_any_size_fails_its_group() -> None:
    bad = [rec("pairs", ["h1", "h2"], 2.0, nbytes=1024, status="wrong"),
           rec("host", ["h0"], 10.0, nbytes=1024, status="failed", reason="rank 1 died")]
    v = judge(run(extra=bad), 25)
    assert v.status_of(v.links["h1 -- h2"]) == FAILED and v.status_of(v.hosts["h0"]) == FAILED
    assert v.worst(v.hosts["h0"]).evidence == "all_reduce ring 1KiB: rank 1 died"  # type: ignore[union-attr]
    assert not v.ok


def test_expected_from_a_profile_judges_the_all_stage() -> None:
    extra = [rec("all", HOSTS, 1.0, expected_busbw_gbps=2.0),
             rec("scale", HOSTS[:2], 1.9, expected_busbw_gbps=2.0)]
    v = judge(run(extra=extra), 25)
    assert [(f.stage, f.status, f.by_pct) for f in v.cluster] == [("all", SLOW, 50.0),
                                                                   ("scale", OK, 0.0)]
    assert v.bad_hosts() == [] and not v.ok


def test_pair_rounds_cover_every_pair_once_with_disjoint_groups() -> None:
    for n in range(1, 12):
        rounds = stages.pair_rounds(n)
        seen = [g.hosts for r in rounds for g in r]
        assert sorted(seen) == list(itertools.combinations(range(n), 2))
        for r in rounds:
            used = [h for g in r for h in g.hosts]
            assert len(used) == len(set(used))
        assert len(rounds) == (0 if n < 2 else n - 1 if n % 2 == 0 else n)
    assert stages.scale_counts(9) == [2, 4, 8] and stages.scale_counts(4) == [2]
    assert stages.host_ranks(["b", "a", "b", "a"]) == [[0, 2], [1, 3]]


def test_groups_at_once_splits_each_round_in_its_order() -> None:
    G = stages.Group
    assert stages.plan("host", 3, 1) == [(G((0,)),), (G((1,)),), (G((2,)),)]
    assert stages.plan("host", 3) == [(G((0,)), G((1,)), G((2,)))]
    for n, k in itertools.product(range(2, 9), range(1, 5)):
        split = stages.plan("pairs", n, k)
        assert [g for r in split for g in r] == [g for r in stages.plan("pairs", n) for g in r]
        assert max(len(r) for r in split) <= k
    assert stages.plan("all", 4, 1) == stages.plan("all", 4)


def confirm(stage: str, target: str, sus: list[str], ref: list[str], sus_bw: float,
            ref_bw: float, blocks: int = 3) -> list[dict[str, Any]]:
    return [rec(f"{stage}-confirm", group, bw, confirm_of=target, role=role, block=b)
            for b in range(blocks)
            for role, group, bw in (("suspect", sus, sus_bw), ("reference", ref, ref_bw))]


def test_suspects_and_their_reference_groups() -> None:
    host = [r for r in run(host={"h1": 3.0}) if r["stage"] == "host"]
    assert suspects(host, 25) == [("host:h1", ("h1",), ("h2",))]
    slow = {p: 0.5 for p in itertools.combinations(HOSTS, 2) if "h3" in p}
    pairs = [r for r in run(pair=slow) if r["stage"] == "pairs"]
    assert suspects(pairs, 25) == [("host:h3", ("h3", "h0"), ("h0", "h1"))]
    pairs = [r for r in run(pair={("h0", "h2"): 1.0}) if r["stage"] == "pairs"]
    assert suspects(pairs, 25) == [("link:h0 -- h2", ("h0", "h2"), ("h0", "h1"))]
    assert suspects([r for r in run() if r["stage"] == "host"], 25) == []


def test_a_suspect_fast_when_re_measured_alone_is_cleared() -> None:
    extra = confirm("host", "host:h0", ["h0"], ["h2"], 9.8, 10.0)
    v = judge(run(host={"h0": 5.0}, extra=extra), 25)
    assert v.ok and v.bad_hosts() == []
    stages_seen = [f.stage for f in v.hosts["h0"]]
    assert "host, re-measured alone" in stages_seen and "host" not in stages_seen


def test_a_suspect_slow_again_alone_is_named_with_that_evidence() -> None:
    slow = {p: 0.5 for p in itertools.combinations(HOSTS, 2) if "h3" in p}
    extra = confirm("pairs", "host:h3", ["h3", "h0"], ["h0", "h1"], 0.5, 2.0)
    v = judge(run(pair=slow, extra=extra), 25)
    assert v.bad_hosts() == ["h3"]
    w = v.worst(v.hosts["h3"])
    assert w is not None and (w.stage, w.by_pct) == ("pairs, re-measured alone", 75.0)
    assert w.evidence.endswith(": 0.5 GB/s busbw against a reference group's 2, medians of 3 "
                               "blocks each alone")


def test_one_host_alone_is_not_judged() -> None:
    """One host and no profile: no stage has a reference, so the verdict says so, not "ok"."""
    rec = {"stage": "host", "group_hosts": ["solo"], "collective": "all_reduce",
           "algorithm": "native", "nbytes": 4 << 20, "status": "ok", "busbw_gbps": 5.0,
           "time_us_mean": 100.0, "world_size": 2}
    v = judge([rec], 25)
    assert (v.ok, v.judged, v.word) == (True, False, "not judged (one host)")
    assert v.lines() == ["not judged: one host, nothing to compare a host with (a profile gives "
                         "each case a prediction to be judged against)"]
    assert v.as_dict()["word"] == "not judged (one host)"
