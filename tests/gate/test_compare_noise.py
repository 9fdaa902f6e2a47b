"""The gate with several baseline runs: the run-to-run noise floor, exactly and end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bench.cli import main
from bench.gate.compare import compare_runs
from bench.gate.decide import Rule
from bench.gate.keys import KEY, Case, load_cases, pooled
from bench.gate.noise import estimate, group_of
from tests.gate.test_compare import write


def _case(alg: str, median: float, n: int = 9) -> Case:
    key = tuple({"kind": "collective", "algorithm": alg, "world_size": 2, "nbytes": 1024}.get(f)
                for f in KEY)
    return Case(key, "collective", ["ok"], [median] * n)


def test_floor_is_the_pooled_t_bound_of_the_run_medians() -> None:
    runs = [{c.key: c for c in (_case("ring", r), _case("tree", t))}
            for r, t in ((100.0, 50.0), (110.0, 50.0), (121.0, 55.0))]
    noise = estimate(runs, Rule(run_alpha=0.01))
    (group, n), = noise.items()
    assert group == group_of(next(iter(runs[0])))
    lr, lt = np.log([100, 110, 121]), np.log([50, 50, 55])
    sigma = math.sqrt((((lr - lr.mean()) ** 2).sum() + ((lt - lt.mean()) ** 2).sum()) / 4)
    assert n.dof == 4 and n.runs == 3 and n.sigma == pytest.approx(sigma, rel=1e-12)
    assert n.floor == pytest.approx(math.expm1(stats.t.ppf(0.99, 4) * sigma * math.sqrt(4 / 3)))
    assert estimate(runs[:1], Rule()) == {}  # one run shows no run-to-run noise


def test_pooled_baselines_concatenate_samples_and_drop_blocks() -> None:
    a, b = _case("ring", 1.0, 3), _case("ring", 2.0, 4)
    a.blocks = b.blocks = 2
    (p,) = pooled([{a.key: a}, {b.key: b}]).values()
    assert p.samples == [1.0] * 3 + [2.0] * 4 and p.statuses == ["ok", "ok"] and p.blocks == 1


def test_noisy_baselines_keep_the_gate_quiet_on_a_machine_shift(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The baseline code ran three times on a machine whose speed moves run to run by ~10 %;
    # the current run (same code) landed 15 % slow. One baseline cries wolf; three do not.
    shifts = (1.0, 1.12, 0.92)
    bases = [write(tmp_path / f"b{i}", scale={"*": f}, seed=i) for i, f in enumerate(shifts)]
    cur = write(tmp_path / "cur", scale={"*": 1.15}, seed=9)
    assert compare_runs(bases[0], cur).exit_code == 1
    res = compare_runs(bases, cur)
    assert res.exit_code == 0 and res.count("same") == 24
    assert all(r.decision.needed > 0.15 for r in res.rows if r.decision)
    assert main(["compare", *map(str, bases), str(cur)]) == 0
    notes = [ln for ln in capsys.readouterr().out.splitlines() if "keys need more than 5%" in ln]
    assert [n.split(" (")[0] for n in notes] == [
        f"# note: at world_size={w}, 12 of 12 keys need more than 5%" for w in (2, 4)]


def test_quiet_baselines_still_catch_one_slower_algorithm(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    bases = [str(write(tmp_path / f"b{i}", seed=i)) for i in range(3)]
    cur = write(tmp_path / "cur", scale={"tree": 1.3}, seed=9)
    html = tmp_path / "gate.html"
    code = main(["compare", *bases, str(cur), "--html", str(html)])
    out = capsys.readouterr().out
    assert code == 1
    page = html.read_text()
    assert "noise floor of the 3 baseline runs" in page and '<th class="n">need</th>' in page
    slower = [ln for ln in out.splitlines() if ln.startswith("SLOWER")]
    assert len(slower) == 6 and all("algorithm=tree" in ln for ln in slower)
    assert "noise floor: spread of the 3 baseline runs' medians" in out
    assert f"baseline={', '.join(bases)}" in out


def test_relative_noise_uses_each_runs_own_native(tmp_path: Path) -> None:
    # Whole-machine shifts cancel against native run by run: the relative floor is far below the
    # absolute one, so a 30 % slower ring is caught behind baselines that moved by 20 %.
    bases = [write(tmp_path / f"b{i}", scale={"*": f}, seed=i)
             for i, f in enumerate((1.0, 1.2, 0.95))]
    cur = write(tmp_path / "cur", scale={"*": 0.9, "ring": 0.9 * 1.3}, seed=9)
    assert compare_runs(bases, cur).exit_code == 0  # absolute: the shifts swamp the ring
    res = compare_runs(bases, cur, Rule(reference=True))
    assert {r.key[KEY.index("algorithm")] for r in res.failures} == {"ring"}
    runs = [load_cases(b)[1] for b in bases]
    absolute, rel = estimate(runs, Rule()), estimate(runs, Rule(reference=True))
    assert max(n.floor for n in rel.values()) < min(n.floor for n in absolute.values()) / 2
