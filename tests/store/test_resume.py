"""``commbench run SCENARIO --resume RUN``: finishes exactly the cases without a record, under the
same scenario, healing a last line cut short, into one coherent run; run directories are never
overwritten and never nested by a scenario's name."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.store.records import KEY_FIELDS, load_results, read_meta
from tests.conftest import ROOT, clean_env, commbench, mpiexec

pytestmark = pytest.mark.mpi

SCENARIO = """\
name: {name}
world_sizes: [1, 2]
sizes: [8B, 1KiB, 64KiB]
algorithms: [native, ring, tree]
timing: {{warmup: 1, iters: 4, repetitions: 1}}
"""
ALL = 2 * 3 * 3  # world sizes x sizes x algorithms


def scenario(tmp_path: Path, name: str = "resume", **changes: str) -> Path:
    text = SCENARIO.format(name=name)
    for old, new in changes.items():
        text = text.replace(old, new)
    path = tmp_path / f"{name.replace('/', '_')}.yaml"
    path.write_text(text)
    return path


def keys(run_dir: Path) -> list[tuple[object, ...]]:
    df = load_results(run_dir, samples=False)
    return [tuple(r) for r in df[list(KEY_FIELDS)].itertuples(index=False)]


def one_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("finished")
    sc = scenario(d)
    res = commbench("run", str(sc), "--out", str(d / "run"), "--no-progress", "--no-report")
    assert res.returncode == 0, res.stderr
    assert len(keys(d / "run")) == ALL
    return sc, d / "run"


def test_resume_finishes_exactly_the_missing_cases(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    sc, full = finished
    run = tmp_path / "run"
    run.mkdir()
    lines = (full / "results.jsonl").read_text().splitlines(keepends=True)
    # keep 10 records (world size 1, and native alone of its group at 2 ranks), then a torn line
    (run / "results.jsonl").write_text("".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
    meta = read_meta(full)
    meta.update(status="interrupted", jobs=meta["jobs"][:1])
    (run / "meta.json").write_text(json.dumps(meta))
    (run / "inflight.json").write_text('{"case": "stale"}')
    res = commbench("run", str(sc), "--resume", str(run), "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "cut off a last line cut short" in res.stdout
    got = keys(run)
    assert len(got) == len(set(got)) == ALL  # every case once: none redone, none missing
    assert sorted(got) == sorted(keys(full))
    after = read_meta(run)
    assert after["status"] == "ok" and after["run_id"] == meta["run_id"]
    assert [j["world_size"] for j in after["jobs"]] == [1, 2]  # world size 1 was complete
    assert len(after["resumed"]) == 1
    assert not (run / "inflight.json").exists()
    assert res.stdout.strip().splitlines()[-1] == str(run / "report.html")


def test_resuming_a_finished_run_does_nothing(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    sc, full = finished
    before = (full / "meta.json").read_text(), (full / "results.jsonl").read_text()
    res = commbench("run", str(sc), "--resume", str(full))
    assert res.returncode == 0, res.stderr
    assert one_line(res) == f"commbench: nothing to resume: every case of {full} has a record"
    assert ((full / "meta.json").read_text(), (full / "results.jsonl").read_text()) == before


def test_resume_refuses_another_scenario(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    _, full = finished
    other = scenario(tmp_path, **{"64KiB": "128KiB"})
    res = commbench("run", str(other), "--resume", str(full))
    assert res.returncode == 2
    assert "made from another scenario" in one_line(res)


@pytest.mark.parametrize("bad, message", [
    ("nowhere", "not a commbench run directory"),
    ("empty", "not a commbench run directory"),
])
def test_resume_refuses_what_is_not_a_run(tmp_path: Path, bad: str, message: str) -> None:
    (tmp_path / "empty").mkdir()
    res = commbench("run", str(scenario(tmp_path)), "--resume", str(tmp_path / bad))
    assert res.returncode == 2 and message in one_line(res)


def test_out_that_holds_something_is_refused(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    sc, full = finished
    before = (full / "results.jsonl").read_text()
    res = commbench("run", str(sc), "--out", str(full))
    assert res.returncode == 2
    assert f"--out {full}: not empty (finish that run with --resume {full}" in one_line(res)
    assert (full / "results.jsonl").read_text() == before


def test_scenario_name_never_nests_run_directories(tmp_path: Path) -> None:
    sc = scenario(tmp_path, name="../team/a b", **{"world_sizes: [1, 2]": "world_sizes: [1]",
                                                   "[native, ring, tree]": "[native]"})
    res = commbench("run", str(sc), "--no-progress", "--no-report", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    made = [p for p in (tmp_path / "runs").iterdir()]
    assert len(made) == 1 and made[0].name.endswith("-team_a_b"), made
    assert (made[0] / "results.jsonl").is_file()


@pytest.mark.slow  # make test only: resuming the missing cases runs in the fast tier
def test_interrupted_run_resumed_to_one_coherent_run(tmp_path: Path) -> None:
    sc = scenario(tmp_path, **{"sizes: [8B, 1KiB, 64KiB]": "sizes: {min: 8B, max: 16MiB}",
                               "world_sizes: [1, 2]": "world_sizes: [2]"})
    run = tmp_path / "run"
    with (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench", "run", str(sc), "--out", str(run),
                                 "--no-progress", "--no-report"], cwd=ROOT, env=clean_env(), text=True,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    results = run / "results.jsonl"
    deadline = time.monotonic() + 120
    while not (results.exists() and results.read_text().count("\n") >= 10):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 128 + signal.SIGTERM
    cut = len(keys(run))
    res = commbench("run", str(sc), "--resume", str(run), "--no-progress", "--no-report")
    assert res.returncode == 0, res.stderr
    got = keys(run)
    assert len(got) == len(set(got)) == 22 * 3 and cut < len(got)  # 8 B .. 16 MiB x 3 algorithms
    meta = read_meta(run)
    assert meta["status"] == "ok" and "signal" not in meta and "interrupted_case" not in meta
    assert [j.get("signal") for j in meta["jobs"]] == ["SIGTERM", None]


@pytest.mark.slow  # make test only: the self-launched resume runs in the fast tier
def test_resume_inside_a_users_mpiexec(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    sc, full = finished
    run = tmp_path / "run"
    run.mkdir()
    lines = (full / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text("".join(lines[:10]))
    (run / "meta.json").write_text((full / "meta.json").read_text())
    cmd = [mpiexec(), "-n", "2", "-launcher", "fork", "-hosts", "localhost", sys.executable, "-m",
           "bench", "run", str(sc), "--resume", str(run), "--no-progress", "--no-report"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=clean_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    got = keys(run)
    assert len(got) == len(set(got)) == ALL
    assert read_meta(run)["status"] == "ok"


TRAINING = """\
name: resume-train
kind: training
models: [mlp]
strategies: [ddp, zero1]
world_sizes: [2]
steps: 2
warmup: 1
backend: gloo
"""


@pytest.mark.training
def test_training_resume_runs_only_the_missing_case(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="training needs torch (pip install torch==2.13.0)")
    (tmp_path / "t.yaml").write_text(TRAINING)
    run = tmp_path / "run"
    res = commbench("run", str(tmp_path / "t.yaml"), "--out", str(run), "--no-progress", "--no-report")
    assert res.returncode == 0, res.stderr
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    assert [json.loads(x)["strategy"] for x in lines] == ["ddp", "zero1"]
    (run / "results.jsonl").write_text(lines[1])  # ddp's record lost: only ddp runs again
    res = commbench("run", str(tmp_path / "t.yaml"), "--resume", str(run), "--no-progress",
                    "--no-report")
    assert res.returncode == 0, res.stderr
    recs = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert [r["strategy"] for r in recs] == ["zero1", "ddp"]
    assert all(r["status"] == "ok" for r in recs)
    meta = read_meta(run)
    assert meta["status"] == "ok" and len(meta["jobs"]) == 2 and len(meta["resumed"]) == 1
    again = commbench("run", str(tmp_path / "t.yaml"), "--resume", str(run))
    assert again.returncode == 0 and "nothing to resume" in again.stderr


def test_a_run_in_use_is_not_touched(tmp_path: Path, finished: tuple[Path, Path]) -> None:
    import fcntl

    sc, full = finished
    run = tmp_path / "run"
    run.mkdir()
    torn = (full / "results.jsonl").read_text()[:-30]  # ends in a torn line a resume would cut
    (run / "results.jsonl").write_text(torn)
    (run / "meta.json").write_text((full / "meta.json").read_text())
    with (run / ".commbench.lock").open("w") as held:  # as the launcher of that run holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        res = commbench("run", str(sc), "--resume", str(run))
    assert res.returncode == 2
    assert one_line(res) == f"commbench: {run}: in use by another commbench run"
    assert (run / "results.jsonl").read_text() == torn


def test_a_key_added_to_scenarios_since_does_not_block_resume(tmp_path: Path) -> None:
    from bench.store.resume import RunDirError, resumable, scenario_hash

    old = {"name": "x", "sizes": [8]}
    (tmp_path / "meta.json").write_text(json.dumps(
        {"schema_version": 1, "source": "commbench", "scenario": old,
         "scenario_hash": scenario_hash(old)}))
    assert resumable(tmp_path, {**old, "emulate": None}, None)["scenario"] == old
    with pytest.raises(RunDirError, match="made from another scenario"):
        resumable(tmp_path, {**old, "emulate": {"profile": "p"}}, None)
