"""The gate with several baseline runs: each key held to the one-baseline rule against each
baseline, combined so that more baselines never pass what one would catch; on synthetic runs
and on recorded ones (tests/data/gate, made by its record.sh)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from bench.cli import main
from bench.collective import canary
from bench.gate.compare import compare_runs
from bench.gate.decide import Decision, Rule
from bench.gate.keys import KEY
from bench.gate.several import UNDECIDED, needed, verdict
from tests.gate.test_compare import write

RECORDED = Path(__file__).parents[1] / "data" / "gate"
BASES = ("base1", "base2", "base3")
_ALG = KEY.index("algorithm")


def _d(v: str, ratio: float = 1.0, need: float = 0.05) -> Decision:
    return Decision(v, ratio, ratio, ratio, math.nan, math.nan, need, "test")


def test_slower_only_when_every_baseline_says_so() -> None:
    assert verdict([_d("slower"), _d("slower"), _d("slower")]) == "slower"
    assert verdict([_d("slower"), _d("same"), _d("slower")]) == UNDECIDED
    assert verdict([_d("slower"), _d("faster")]) == UNDECIDED
    assert verdict([_d("faster"), _d("faster")]) == "faster"
    assert verdict([_d("faster"), _d("same")]) == "same"
    assert verdict([_d("untested"), _d("untested")]) == "untested"


def test_need_is_the_effect_over_the_pooled_median_that_clears_every_baseline() -> None:
    # baselines at 100 and 120 µs, pooled median 110, current 132: ratios 1.32, 1.1, 1.2
    pooled = _d("slower", 132 / 110)
    each = [_d("slower", 132 / 100, 0.05), _d("same", 132 / 120, 0.08)]
    assert needed(pooled, each) == pytest.approx(1.08 * 120 / 110 - 1)


@pytest.mark.parametrize("factor", [1.3, 2.0])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_quiet_baselines_catch_an_injected_slowdown_at_any_count(tmp_path: Path, k: int,
                                                                 factor: float) -> None:
    bases = [write(tmp_path / f"b{i}", seed=i) for i in range(k)]
    cur = write(tmp_path / "cur", scale={"tree": factor}, seed=9)
    res = compare_runs(bases, cur)
    assert res.exit_code == 1 and not res.undecided
    assert {r.key[_ALG] for r in res.failures} == {"tree"} and len(res.failures) == 6


@pytest.mark.parametrize("factor", [1.3, 2.0])
def test_shifted_baselines_never_pass_what_one_baseline_catches(tmp_path: Path,
                                                                factor: float) -> None:
    # The baseline code ran three times on a machine whose speed moves run to run by ~10-20 %.
    bases = [write(tmp_path / f"b{i}", scale={"*": f}, seed=i)
             for i, f in enumerate((1.0, 1.25, 0.92))]
    cur = write(tmp_path / "cur", scale={"tree": factor}, seed=9)
    for subset in (s for n in (2, 3) for s in itertools.combinations(bases, n)):
        alone = [compare_runs(b, cur).exit_code for b in subset]
        together = compare_runs(list(subset), cur)
        if 1 in alone:
            assert together.exit_code != 0, subset
    res = compare_runs(bases, cur)
    tree = {r.outcome for r in res.rows if r.key[_ALG] == "tree"}
    # 2x clears every baseline; 1.3x is within the 25 % the baselines disagree by
    assert (res.exit_code, tree) == ((1, {"slower"}) if factor == 2.0 else (2, {UNDECIDED}))


def test_a_machine_shift_within_the_baselines_spread_is_undecided_not_passed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The same code, the current run 15 % slow on a machine whose runs differ by ~10 %: one
    # baseline cries wolf; three cannot tell, and say so instead of passing or failing.
    shifts = (1.0, 1.12, 0.92)
    bases = [write(tmp_path / f"b{i}", scale={"*": f}, seed=i) for i, f in enumerate(shifts)]
    cur = write(tmp_path / "cur", scale={"*": 1.15}, seed=9)
    assert compare_runs(bases[0], cur).exit_code == 1
    assert main(["compare", *map(str, bases), str(cur)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("UNDECIDED: ") and out[-1].endswith(
        "the baselines disagree more than the effect you gate on: add baselines or use "
        "`commbench ab`")


@pytest.mark.parametrize(("canaries", "said"), [
    (None, "no drift canary was recorded, so nothing tells the machine from the code"),
    ((1.0, 1.0), "the drift canaries saw the same machine, so the code or the stack under it "
                 "changed"),
    ((1.0, 3.0), "the drift canaries say the machine changed (notes below): rerun, or use "
                 "--relative")])
def test_a_regression_is_blamed_on_the_machine_only_when_the_canaries_say_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], canaries: tuple[float, float] | None,
        said: str) -> None:
    base = write(tmp_path / "base")
    cur = write(tmp_path / "cur", scale={"tree": 2.0, "ring": 2.0, "naive": 2.0}, seed=9)
    for run, speed in zip((base, cur), canaries or ()):
        canary.append(run, {"when": "start", **{m: [10.0 * speed + i * 0.01 for i in range(9)]
                                                for m in canary.METRICS}})
    assert main(["compare", str(base), str(cur)]) == 1
    notes = [ln for ln in capsys.readouterr().out.splitlines() if "the median key is" in ln]
    assert len(notes) == 2 and all(ln.endswith(said) for ln in notes)


def test_recorded_runs_never_pass_what_one_baseline_catches() -> None:
    # Real runs of tests/data/gate/scenario.yaml on a busy 2-core machine; slow* ran with the
    # test plugin's ring slowdown. Decisions on recorded data are deterministic (seeded bootstrap).
    got = {}
    for cur in ("slow1.3", "slow2"):
        for n in (1, 2, 3):
            for subset in itertools.combinations(BASES, n):
                got[cur, subset] = compare_runs([RECORDED / b for b in subset], RECORDED / cur)
    for (cur, subset), res in got.items():
        if any(got[cur, (b,)].exit_code == 1 for b in subset):
            assert res.exit_code != 0, (cur, subset)
        assert not {r.key[_ALG] for r in res.failures} - {"ring", "native"}
    assert [got["slow2", s].exit_code for s in itertools.combinations(BASES, 2)] == [2, 2, 1]
    ring = {r.key[KEY.index("nbytes")] for r in got["slow2", ("base2", "base3")].failures
            if r.key[_ALG] == "ring"}
    assert ring == {65536, 262144, 1048576}  # 4 MiB: base3's ring was 1.8x its own run's


def test_readmes_example_with_a_2x_slowdown_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(RECORDED / "base2"), str(RECORDED / "base3"),
                 str(RECORDED / "slow2")])
    out = capsys.readouterr().out
    assert code == 1 and out.splitlines()[-1].startswith("FAIL: ")


def test_a_pass_shows_the_tables_extremes(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bases = [str(write(tmp_path / f"b{i}", seed=i)) for i in range(2)]
    cur = write(tmp_path / "cur", seed=9)
    assert main(["compare", *bases, str(cur)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("# extremes of the keys not listed (largest and smallest ratio):")
    assert out[at + 1].startswith("SAME") and out[at + 2].startswith("SAME")
    assert out[-1] == "PASS: no regression in 24 keys"


def test_quiet_baselines_still_catch_one_slower_algorithm(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    bases = [str(write(tmp_path / f"b{i}", seed=i)) for i in range(3)]
    cur = write(tmp_path / "cur", scale={"tree": 1.3}, seed=9)
    html = tmp_path / "gate.html"
    code = main(["compare", *bases, str(cur), "--html", str(html)])
    out = capsys.readouterr().out
    assert code == 1
    page = html.read_text()
    assert "With 3 baseline runs each key is held to that rule" in page
    assert '<th class="n">need</th>' in page
    slower = [ln for ln in out.splitlines() if ln.startswith("SLOWER")]
    assert len(slower) == 6 and all("algorithm=tree" in ln for ln in slower)
    assert "# 3 baselines: each key is held to the rule against each baseline run alone" in out
    assert f"baseline={', '.join(bases)}" in out


def test_relative_mode_decides_each_baseline_against_its_own_native(tmp_path: Path) -> None:
    # Whole-machine shifts cancel against native run by run: a 30 % slower ring is caught behind
    # baselines that moved by 20 %, which leave the absolute gate undecided about it.
    bases = [write(tmp_path / f"b{i}", scale={"*": f}, seed=i)
             for i, f in enumerate((1.0, 1.2, 0.95))]
    cur = write(tmp_path / "cur", scale={"*": 0.9, "ring": 0.9 * 1.3}, seed=9)
    absolute = compare_runs(bases, cur)
    assert absolute.exit_code == 2 and {r.key[_ALG] for r in absolute.undecided} == {"ring"}
    res = compare_runs(bases, cur, Rule(reference=True))
    assert res.exit_code == 1 and {r.key[_ALG] for r in res.failures} == {"ring"}
