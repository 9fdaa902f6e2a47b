"""The regression gate: A vs A passes, slower fails naming keys, faster is reported, bad input 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.cli import main
from bench.gate.compare import compare_runs
from bench.gate.decide import Rule, decide
from tests.helpers import synthetic

SPEC = synthetic.Spec(world_sizes=(2, 4), sizes=(1024, 65536, 1 << 20), samples=60)


def write(path: Path, scale: dict[str, float] | None = None, seed: int = 0,
          edit: Any = None) -> Path:
    recs = list(synthetic.collective_records(synthetic.Spec(**{**SPEC.__dict__, "seed": seed})))
    for r in recs:
        f = (scale or {}).get(r["algorithm"], (scale or {}).get("*", 1.0))
        r["samples_us"] = [x * f for x in r["samples_us"]]
        if edit:
            edit(r)
    return synthetic.write_run(path, recs, synthetic.meta(path.name))


@pytest.fixture()
def base(tmp_path: Path) -> Path:
    return write(tmp_path / "base")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_vs_a_passes(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, str(base), str(base))
    assert code == 0
    assert out.strip().endswith(f"PASS: no regression in {3 * 2 * 4} keys")


def test_independent_noise_passes(base: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    other = write(tmp_path / "other", seed=7)  # same model, fresh 5 % log-normal noise
    code, out, _ = run_cli(capsys, str(base), str(other))
    assert code == 0, out


def test_scaled_by_1_3_fails_naming_the_keys(base: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    slow = write(tmp_path / "slow", scale={"*": 1.3})
    code, out, _ = run_cli(capsys, str(base), str(slow))
    assert code == 1
    slower = [ln for ln in out.splitlines() if ln.startswith("SLOWER")]
    assert len(slower) == 24
    assert any("algorithm=ring" in ln and "world_size=4" in ln and "nbytes=65536" in ln
               for ln in slower)
    assert "FAIL: 24 of 24 keys regressed" in out


def test_one_algorithm_slower_fails_only_its_keys(base: Path, tmp_path: Path) -> None:
    slow = write(tmp_path / "slow", scale={"tree": 1.3})
    res = compare_runs(base, slow)
    failing = {r.key for r in res.failures}
    assert res.exit_code == 1 and len(failing) == 6
    assert all(k[2] == "tree" for k in failing)


def test_relative_mode_is_blind_to_a_uniform_slowdown_but_not_to_one_algorithm(
        base: Path, tmp_path: Path) -> None:
    uniform = write(tmp_path / "uniform", scale={"*": 1.3})
    res = compare_runs(base, uniform, Rule(reference=True))
    assert res.exit_code == 0 and res.count("reference slower") == 6
    one = write(tmp_path / "one", scale={"ring": 1.3})
    res = compare_runs(base, one, Rule(reference=True))
    assert res.exit_code == 1 and {r.key[2] for r in res.failures} == {"ring"}


def test_faster_copy_passes_and_is_reported(base: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fast = write(tmp_path / "fast", scale={"ring": 0.7})
    code, out, _ = run_cli(capsys, str(base), str(fast))
    assert code == 0
    faster = [ln for ln in out.splitlines() if ln.startswith("FASTER")]
    assert len(faster) == 6 and all("algorithm=ring" in ln for ln in faster)
    assert "6 faster" in out


def test_small_slowdown_under_threshold_passes(base: Path, tmp_path: Path) -> None:
    slow = write(tmp_path / "slow", scale={"*": 1.03})
    assert compare_runs(base, slow).exit_code == 0


def test_deterministic_fields_change_fails(base: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def more_bytes(r: dict[str, Any]) -> None:
        if r["algorithm"] == "ring" and r["nbytes"] == 1024 and r["world_size"] == 2:
            r["bytes_sent_max"] += 8

    code, out, _ = run_cli(capsys, str(base), str(write(tmp_path / "b", edit=more_bytes)))
    assert code == 1
    assert "CHANGED" in out and "bytes_sent_max 1024 -> 1032" in out


def test_wrong_count_change_fails(base: Path, tmp_path: Path) -> None:
    def wrong(r: dict[str, Any]) -> None:
        if r["algorithm"] == "naive" and r["nbytes"] == 65536 and r["world_size"] == 4:
            r["wrong"] = 3

    res = compare_runs(base, write(tmp_path / "w", edit=wrong))
    assert [r.outcome for r in res.failures] == ["changed"]


def test_failed_case_fails_the_gate(base: Path, tmp_path: Path) -> None:
    def fail(r: dict[str, Any]) -> None:
        if r["algorithm"] == "tree" and r["nbytes"] == 1024 and r["world_size"] == 2:
            r["status"] = "failed"

    res = compare_runs(base, write(tmp_path / "f", edit=fail))
    assert [r.outcome for r in res.failures] == ["failed"]


def test_mismatched_schema_exits_2(base: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    other = write(tmp_path / "v2")
    meta = json.loads((other / "meta.json").read_text())
    meta["schema_version"] = 2
    (other / "meta.json").write_text(json.dumps(meta))
    code, out, err = run_cli(capsys, str(base), str(other))
    assert code == 2 and out == ""
    assert "schema_version 2" in err and err.count("\n") == 1


@pytest.mark.parametrize("problem", ["missing", "no common keys", "empty"])
def test_unusable_input_exits_2(base: Path, tmp_path: Path, problem: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    if problem == "missing":
        other = tmp_path / "nope"
    elif problem == "empty":
        other = synthetic.write_run(tmp_path / "empty", [])
    else:
        other = write(tmp_path / "fp16", edit=lambda r: r.update(dtype="float16"))
    code, _, err = run_cli(capsys, str(base), str(other))
    assert code == 2 and err.startswith("commbench: compare: ") and err.count("\n") == 1
    assert {"missing": "no such run directory", "empty": "no records",
            "no common keys": "no common keys"}[problem] in err


def test_html_diff_through_the_reporter(base: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    slow = write(tmp_path / "slow", scale={"ring": 1.3})
    html = tmp_path / "diff.html"
    code, _, _ = run_cli(capsys, str(base), str(slow), "--html", str(html))
    text = html.read_text()
    assert code == 1
    assert '<section id="gate">' in text and "<strong>FAIL</strong>" in text
    assert text.index('id="gate"') < text.index('id="bandwidth"')


def test_decide_needs_effect_beyond_threshold_and_drift() -> None:
    rng = np.random.default_rng(1)
    base = 100 * rng.lognormal(0, 0.02, 400)
    assert decide(base, base * 1.04, Rule()).verdict == "same"  # significant but < 5 %
    assert decide(base, base * 1.10, Rule()).verdict == "slower"
    drifting = np.concatenate([base[:200], base[200:] * 1.3])  # blocks disagree by 30 %
    assert decide(drifting, drifting * 1.10, Rule(), blocks=2).verdict == "same"
    assert decide(drifting, drifting * 2.0, Rule(), blocks=2).verdict == "slower"


def test_decide_ignores_differences_below_timer_resolution() -> None:
    base = np.full(100, 0.3) + np.linspace(0, 0.01, 100)
    assert decide(base, base * 1.5, Rule()).verdict == "same"
    assert decide(base, base * 1.5, Rule(min_abs=0.0)).verdict == "slower"


def test_ci_scenario_is_small_and_loads() -> None:
    from bench.collective.scenario import load_scenario

    sc = load_scenario(Path(__file__).parents[2] / "scenarios" / "ci.yaml")
    assert sc.name == "ci" and sc.world_sizes == [1, 2]
    assert len(sc.byte_sizes()) * len(sc.algorithms) * len(sc.world_sizes) <= 40


def test_the_gate_flags_are_the_rules_defaults_and_spellings() -> None:
    from bench.gate.decide import Rule
    from bench.gate.flags import FLAGS, rule_from
    from tests.helpers.parsers import command_parsers

    parsers = dict(command_parsers())
    compare, ab = parsers["compare"], parsers["ab"]
    names = tuple(FLAGS)
    assert rule_from(compare.parse_args(["a", "b"]), names) == Rule()
    got = rule_from(compare.parse_args(["a", "b", "--threshold", "10", "--relative", "--min-abs",
                                        "2", "--strict"]), names)
    assert got == Rule(threshold=0.1, reference=True, min_abs=2.0, strict=True)
    spelled = {o for a in ab._actions for o in a.option_strings}
    assert {"--threshold", "--relative", "--min-abs", "--strict", "--alpha"} <= spelled
    assert ab.parse_args(["x", "y", "s.yaml"]).threshold == Rule().threshold * 100
