"""The drift canary flags a run whose machine changed speed beyond the canary's own noise, and
two runs taken at different speeds; it stays quiet on noise alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.measure import canary


def _reading(when: str, us_1mib: float, rng: np.random.Generator, spread: float = 0.05) -> dict:
    def s(m: float) -> list[float]:
        return (m * (1 + spread * rng.standard_normal(canary.ITERS))).tolist()

    return {"when": when, "allreduce_1KiB_us": s(4.0), "allreduce_1MiB_us": s(us_1mib),
            "memcpy_GBps": s(30.0)}


def test_the_vm_mode_switch_is_flagged() -> None:
    rng = np.random.default_rng(1)
    readings = [_reading("start", 136.0, rng), _reading("after world size 2", 560.0, rng)]
    lines = canary.assess(readings)
    assert len(lines) == 1 and lines[0].startswith("allreduce_1MiB_us") and "after world size 2" in lines[0]


def test_noise_alone_is_not_drift() -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        assert canary.assess([_reading("a", 136.0, rng, 0.3), _reading("b", 136.0, rng, 0.3)]) == []


def test_a_small_but_certain_move_is_not_drift() -> None:
    rng = np.random.default_rng(3)
    assert canary.assess([_reading("a", 100.0, rng, 0.01), _reading("b", 110.0, rng, 0.01)]) == []


def test_two_runs_at_different_speeds_disagree() -> None:
    rng = np.random.default_rng(4)
    a = [_reading("start", 136.0, rng), _reading("end", 140.0, rng)]
    b = [_reading("start", 560.0, rng), _reading("end", 570.0, rng)]
    assert canary.assess(a) == [] and canary.assess(b) == []
    assert [x.split(":")[0] for x in canary.disagree(a, b)] == ["allreduce_1MiB_us"]


def test_read_skips_a_line_cut_short(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    canary.append(tmp_path, _reading("start", 136.0, rng))
    with (tmp_path / canary.CANARY).open("a") as f:
        f.write(json.dumps(_reading("end", 136.0, rng))[:40])
    assert [r["when"] for r in canary.read(tmp_path)] == ["start"]


def test_the_report_says_the_machine_changed_speed(tmp_path: Path) -> None:
    from reports.render import render_run
    from tests.helpers import synthetic

    spec = synthetic.Spec(world_sizes=(1, 2), sizes=(8, 4096), seed=1)
    run = synthetic.write_run(tmp_path / "run", list(synthetic.collective_records(spec)))
    rng = np.random.default_rng(6)
    canary.append(run, _reading("start of job p=2", 136.0, rng))
    canary.append(run, _reading("after world size 2", 560.0, rng))
    html = Path(render_run(run)).read_text()
    assert "Drift canary" in html and canary.WARNING in html


def test_ab_rounds_are_matched_by_the_canarys_one_rule() -> None:
    from bench.gate.matched import mismatched

    base = {1: 100.0, 2: 100.0, 3: 100.0}
    head = {1: 100.0 * canary.FACTOR * 0.99, 2: 100.0 * canary.FACTOR, 3: 100.0 / canary.FACTOR}
    assert [m.round for m in mismatched(base, head)] == [2, 3]
    assert [canary.changed_speed([base[r]], [head[r]]) for r in (1, 2, 3)] == [False, True, True]
