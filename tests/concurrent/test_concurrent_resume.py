"""``kind: concurrent`` resumes like every kind: SIGTERM ends a self-launched run with exit 143
and an ``interrupted`` run directory; ``--resume`` runs only the groups' steps and overlap cases
without a record (each step once, the records kept unchanged)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from bench.concurrent.define import group_key, overlap_key
from bench.store.records import iter_records, read_meta
from tests.conftest import ROOT, clean_env

SIZES = [1024, 2048, 4096, 8192]
ROUNDS = 4
# 2 nodes of 2 ranks: tp has a communicator per node, dp one per place across nodes (2 each),
# so every step of a group leaves 2 records; 4 sizes x 2 groups x 4 rounds x 2 modes = 64 steps
SCENARIO = f"""
kind: concurrent
world_size: 4
ranks_per_node: 2
sizes: {SIZES}
rounds: {ROUNDS}
timing: {{warmup: 0, iters: 2, repetitions: 1}}
groups:
  - {{name: tp, collective: all_reduce, members: node}}
  - {{name: dp, collective: reduce_scatter, algorithm: ring, members: across}}
overlap:
  - {{collective: all_reduce, progress: nonblocking}}
"""


def _keys(run_dir: Path) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    for r in iter_records(run_dir, samples=False):
        if r["kind"] == "concurrent":
            out[group_key(r["group"], r["mode"], r["round"], r["requested_nbytes"])] += 1
        else:
            out[overlap_key(r, r["requested_nbytes"])] += 1
    return out


@pytest.mark.mpi
@pytest.mark.slow
def test_sigterm_then_resume_runs_only_the_missing_cases(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(SCENARIO)
    run_dir = tmp_path / "run"
    results = run_dir / "results.jsonl"
    with (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench", "run", str(tmp_path / "c.yaml"),
                                 "--out", str(run_dir), "--no-progress", "--no-report"], cwd=ROOT,
                                env=clean_env(), text=True, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    deadline = time.monotonic() + 180
    while not (results.exists() and results.read_text().count("\n") >= 2):
        assert proc.poll() is None, (tmp_path / "err.txt").read_text()
        assert time.monotonic() < deadline, "no record within 180 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)  # 64 steps and 4 overlap cases: far from the end
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert "interrupted by SIGTERM" in (tmp_path / "err.txt").read_text()
    assert read_meta(run_dir)["status"] == "interrupted"
    kept = results.read_text().splitlines()
    before = _keys(run_dir)
    assert 0 < sum(before.values()) < 2 * 64

    res = subprocess.run([sys.executable, "-m", "bench", "run", "--resume", str(run_dir),
                          "--no-progress", "--no-report"], cwd=ROOT, env=clean_env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert results.read_text().splitlines()[:len(kept)] == kept
    steps = {group_key(g, mode, rnd, n): 2 for n in SIZES for g in ("tp", "dp")
             for rnd in range(ROUNDS) for mode in ("alone", "together")}
    cases = {overlap_key({"collective": "all_reduce", "algorithm": "native",
                          "progress": "nonblocking"}, n): 1 for n in SIZES}
    assert _keys(run_dir) == Counter({**steps, **cases})  # each case once: only the missing ran
    assert read_meta(run_dir)["status"] == "ok"
