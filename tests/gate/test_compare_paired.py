"""The paired A/B statistics on synthetic rounds: exact formulas, drift that cancels, slowdowns
found on the keys that have them, the stated false-alarm rate, and a side directory's rounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bench.gate.compare import compare_runs
from bench.gate.decide import Rule
from bench.gate.keys import KEY, Case, InputError, Key
from bench.gate.paired import (
    ROUND,
    Round,
    compare_dirs,
    decide_rounds,
    log_ratios,
    min_rounds,
    paired,
)
from bench.gate.paired_table import render

ALGS = ("native", "ring", "tree", "halving_doubling")
SIZES = (1024, 65536, 1 << 20)


def key(alg: str, nbytes: int = 65536, world: int = 2) -> Key:
    fields = {"kind": "collective", "collective": "all_reduce", "algorithm": alg,
              "transport": "mpi", "world_size": world, "nbytes": nbytes, "dtype": "float32",
              "op": "sum"}
    return tuple(fields.get(f) for f in KEY)


def case(k: Key, median: float, rng: np.random.Generator, n: int = 60, jitter: float = 0.05) -> Case:
    return Case(k, "collective", ["ok"], list(median * np.exp(rng.normal(0, jitter, n))))


def rounds(n: int, seed: int, slow: dict[str, float] | None = None, drift: float = 0.4,
           pair_noise: float = 0.02, key_noise: float = 0.03, mode: float = 0.0) -> list[Round]:
    """``n`` rounds of every (algorithm, size): each run's machine speed is the round's (log-normal,
    sd ``drift``: huge) times its own (sd ``pair_noise``, shared by its keys; with ``mode`` > 0,
    half the runs are that much slower too: the VM's slow mode), times each key's own (sd
    ``key_noise``); HEAD's ``slow`` algorithms scaled."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        machine = math.exp(rng.normal(0, drift))
        sides = []
        for factors in ({}, slow or {}):
            run = machine * math.exp(rng.normal(0, pair_noise) + mode * rng.integers(0, 2))
            sides.append({(k := key(a, s)): case(k, run * math.exp(rng.normal(0, key_noise)) * s / 100
                                                 * factors.get(a, 1.0), rng)
                          for a in ALGS for s in SIZES})
        out.append((sides[0], sides[1]))
    return out


def test_paired_test_is_the_exact_signed_rank_test_and_its_bounds() -> None:
    rule = Rule(threshold=0.05)
    rng = np.random.default_rng(0)
    for n in (5, 7, 10):
        d = rng.normal(0.08, 0.1, n)
        pr = paired(d, rule, alpha=0.05)
        assert pr is not None and pr.n == n
        for alt, p in (("greater", pr.p_slower), ("less", pr.p_faster)):
            assert p == pytest.approx(stats.wilcoxon(d, alternative=alt, method="exact").pvalue)
        walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
        assert pr.ratio == pytest.approx(math.exp(np.median(walsh)))
        # the lower bound is where the test stops rejecting: shifted just below it, it rejects
        lo = math.log(pr.low)
        assert stats.wilcoxon(d - (lo - 1e-9), alternative="greater", method="exact").pvalue <= 0.05
        assert stats.wilcoxon(d - (lo + 1e-9), alternative="greater", method="exact").pvalue > 0.05
        assert pr.need == pytest.approx(1.05 * math.exp(np.median(walsh) - lo) - 1)
    assert paired(np.log([1.2, 1.3, 1.25, 1.22, 1.21]), rule).low == pytest.approx(1.2)  # all 5
    assert min_rounds(0.05) == 5 and min_rounds(0.01) == 7 and min_rounds(1 / 32) == 5
    assert paired(np.ones(4), rule, alpha=0.05) is None  # 2^-4 > 0.05: cannot alarm, so untested


def test_one_key_s_wild_round_does_not_hide_another_key_s_slowdown() -> None:
    rr = rounds(5, seed=8, slow={"ring": 1.3})
    for base, _ in rr[:1]:  # one awful BASE round for tree only
        base[key("tree")].samples = [x * 8 for x in base[key("tree")].samples]
    res = decide_rounds(rr, Rule())
    assert {r.key for r in res.rows if r.outcome == "slower"} == {key("ring", s) for s in SIZES}
    assert log_ratios(rr, key("tree"))[0] < -1.5


def test_round_drift_cancels_where_the_unpaired_gate_cries_wolf(tmp_path: Path) -> None:
    rr = rounds(5, seed=2)
    res = decide_rounds(rr, Rule())
    assert res.exit_code == 0 and res.count("same") == len(ALGS) * len(SIZES)
    # The same data as two single runs (round 1 vs round 2 of BASE) would fail: drift 0.4.
    write_side(tmp_path / "b1", [rr[0]], 0)
    write_side(tmp_path / "b2", [rr[1]], 0)
    assert compare_runs(tmp_path / "b1", tmp_path / "b2").exit_code != 0 or math.isclose(
        np.median(rr[0][0][key("ring")].samples), np.median(rr[1][0][key("ring")].samples), rel_tol=0.1)


def test_a_slowdown_of_one_algorithm_is_found_on_its_keys_only() -> None:
    res = decide_rounds(rounds(5, seed=3, slow={"ring": 1.15}), Rule())
    slower = {r.key for r in res.rows if r.outcome == "slower"}
    assert slower == {key("ring", s) for s in SIZES} and res.exit_code == 1
    for r in res.rows:
        assert r.decision is not None and r.decision.method.startswith("paired signed-rank over 5")
        if r.outcome == "slower":
            assert 1.10 < r.decision.ratio < 1.20 and r.decision.low > 1.05
    text = render(res, 5, 0.05)
    assert text.splitlines()[-1] == f"FAIL: 3 of {len(ALGS) * len(SIZES)} keys regressed"
    assert "# detectable at world_size=2: median +" in text


def test_relative_mode_cancels_a_machine_mode_switch_between_the_runs_of_a_round() -> None:
    rr = rounds(5, seed=7, slow={"ring": 1.3}, mode=1.0)  # e^1: 2.7x slower runs, at random
    assert decide_rounds(rr, Rule()).count("slower") == 0  # absolute: buried in the switches
    res = decide_rounds(rr, Rule(reference=True))
    assert {r.key for r in res.rows if r.outcome == "slower"} == {key("ring", s) for s in SIZES}
    assert all(r.outcome == "same" for r in res.rows if r.key[KEY.index("algorithm")] == "native")


def test_faster_is_reported_and_passes() -> None:
    res = decide_rounds(rounds(5, seed=4, slow={"tree": 0.8}), Rule())
    assert res.exit_code == 0 and res.count("faster") == len(SIZES)


def test_false_alarms_stay_under_the_stated_rate() -> None:
    # 60 null A/B jobs of 12 keys at alpha 0.05, threshold 0: the signed-rank test alone alarms
    # 1/32 of the time with 5 rounds; the within-run tests must agree too. Keys nearly
    # independent (little shared noise), so 720 tests: about 0.7 % sampling error.
    rule = Rule(threshold=0.0, alpha=0.05, resamples=200)
    flagged = tested = 0
    for seed in range(60):
        res = decide_rounds(rounds(5, seed=100 + seed, pair_noise=0.005, key_noise=0.05), rule)
        flagged += res.count("slower")
        tested += len(res.rows)
    assert flagged / tested <= 0.05 + 0.02


def test_failed_only_in_and_untested_keys() -> None:
    rr = rounds(3, seed=5)
    gone = key("tree", 1024)
    for base, head in rr:
        head[key("ring", 1024)].statuses = ["failed"]
        del head[gone]  # type: ignore[attr-defined]
        base[key("tree")].exact["bytes_sent_max"] = {65536}
        head[key("tree")].exact["bytes_sent_max"] = {98304}
    res = decide_rounds(rr, Rule())
    by = {r.key: r.outcome for r in res.rows}
    assert by[key("ring", 1024)] == "failed" and by[gone] == "only in baseline"
    assert by[key("tree")] == "changed"
    assert res.exit_code == 1
    lone = [({key("ring"): rr[0][0][key("ring")]}, {key("ring"): rr[0][1][key("ring")]})]
    assert decide_rounds(lone, Rule()).rows[0].outcome == "untested"  # one round: no test


def write_side(path: Path, rr: list[Round], side: int) -> Path:
    path.mkdir(parents=True)
    (path / "meta.json").write_text(json.dumps({"schema_version": 1, "run_id": path.name}))
    with (path / "results.jsonl").open("w") as fh:
        for i, rnd in enumerate(rr, 1):
            for k, c in rnd[side].items():
                rec = {f: v for f, v in zip(KEY, k) if v is not None}
                fh.write(json.dumps({**rec, "schema_version": 1, "status": c.statuses[0],
                                     "samples_us": c.samples, ROUND: i}) + "\n")
    return path


def test_side_directories_pair_by_round(tmp_path: Path) -> None:
    rr = rounds(6, seed=6, slow={"ring": 1.3})
    base, head = write_side(tmp_path / "base", rr, 0), write_side(tmp_path / "head", rr[:5], 1)
    res = compare_dirs(base, head, Rule())
    assert {r.key for r in res.rows if r.outcome == "slower"} == {key("ring", s) for s in SIZES}
    assert all(r.decision and "over 5 rounds" in r.decision.method for r in res.rows)
    with pytest.raises(InputError, match="no such run directory"):
        compare_dirs(tmp_path / "nothing", head, Rule())


def _canaried(side_dir: Path, speeds: list[float]) -> None:
    """Round i of the side ran in a run directory whose drift canary read ``speeds[i]`` us."""
    meta = json.loads((side_dir / "meta.json").read_text())
    meta["ab"] = {"rounds": []}
    for i, us in enumerate(speeds, 1):
        run = side_dir.parent / f"{side_dir.name}-run-{i}"
        run.mkdir(exist_ok=True)
        (run / "canary.jsonl").write_text("".join(
            json.dumps({"world_size": w, "allreduce_1MiB_us": [us * 0.99, us, us * 1.01]}) + "\n"
            for w in (1, 2)))
        meta["ab"]["rounds"].append({ROUND: i, "run": str(run)})
    (side_dir / "meta.json").write_text(json.dumps(meta))


def test_rounds_whose_runs_saw_different_machines_are_set_aside(tmp_path: Path) -> None:
    """The VM's slow mode in one run of a round (canary 3x) makes that round's ratio the mode's:
    such rounds are not decided on, so one of them no longer hides a slowdown."""
    from bench.gate.matched import mismatched, round_speeds

    rr = rounds(7, seed=11, slow={"ring": 1.3}, drift=0.0)
    base_rounds, head_rounds = rr, list(rr)
    b, h = head_rounds[2]  # round 3: HEAD's run in the slow mode, every key 3x
    head_rounds[2] = (b, {k: Case(k, c.kind, c.statuses, [3 * x for x in c.samples])
                          for k, c in h.items()})
    base = write_side(tmp_path / "base", base_rounds, 0)
    head = write_side(tmp_path / "head", head_rounds, 1)
    _canaried(base, [264, 262, 268, 263, 270, 266, 265])
    _canaried(head, [265, 263, 796, 262, 268, 264, 266])
    got = mismatched(round_speeds(base), round_speeds(head))
    assert [(m.round, round(m.base_us), round(m.head_us)) for m in got] == [(3, 268, 796)]
    res = compare_dirs(base, head, Rule())
    assert all(r.decision and "over 6 rounds" in r.decision.method for r in res.rows)
    assert {r.key for r in res.rows if r.outcome == "slower"} == {key("ring", s) for s in SIZES}
    _canaried(head, [800] * 7)  # every round mismatched: nothing can be compared
    with pytest.raises(InputError, match="changed speed"):
        compare_dirs(base, head, Rule())
