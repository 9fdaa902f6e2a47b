"""``commbench ab``: one-line refusals (rounds, scenario, revisions, dependencies), and for real:
two worktrees of this repository run alternately, records tagged by round, the gate's verdict
exactly its rule on the recorded rounds, no worktree left behind; a slowdown injected into those
recorded rounds is caught on its keys only;
SIGTERM or SIGINT mid-round end the run in flight with every process, remove the worktrees and
mark the sides interrupted; the HTML states ab's rule, not compare's."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import psutil
import pytest

from bench.gate.ab import Side, resolve, run_rounds, worktrees
from bench.gate.abdeps import mismatch, unsatisfied
from bench.gate.decide import Rule
from bench.gate.keys import KEY
from bench.gate.matched import mismatched, round_speeds
from bench.gate.paired import ROUND, compare_dirs
from bench.gate.paired_table import render
from bench.store.records import iter_records, read_meta
from reports.ab_section import ab_section
from tests.conftest import ROOT, clean_env

TINY = """
name: ab-tiny
collective: allreduce
transports: [mpi]
world_sizes: [2]
ranks_per_node: [auto]
sizes: [64KiB, 256KiB]
algorithms: [native, ring, tree]
dtypes: [float32]
ops: [sum]
timing: {warmup: 3, time_budget_ms: 40, min_iters: 30, max_iters: 2000, repetitions: 2}
check: true
case_timeout_s: 60
"""


def ab(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", "ab", *args], capture_output=True,
                          text=True, env=clean_env(), cwd=cwd, timeout=timeout)


def one_line(res: subprocess.CompletedProcess[str], *words: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("commbench: ab: "), res.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_refusals_are_one_line(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    one_line(ab("HEAD", "HEAD", str(sc), "--rounds", "1"), "--rounds must be >= 2")
    one_line(ab("HEAD", "HEAD", str(sc), "--rounds", "3"), "--alpha 0.05 needs --rounds >= 5")
    one_line(ab("HEAD", "HEAD", str(tmp_path / "none.yaml")), "no such scenario file")
    one_line(ab("HEAD", "no-such-rev-xyz", str(sc)), "'no-such-rev-xyz' is not a commit")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    one_line(ab("HEAD", "HEAD", str(sc), "--out", str(tmp_path / "full")), "not empty")


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for tag, deps in (("a", '["numpy>=1.26"]'), ("b", '["numpy>=1.26", "left-pad>=1"]')):
        (repo / "pyproject.toml").write_text(f'[project]\nname = "x"\ndependencies = {deps}\n')
        subprocess.run([*git, "add", "pyproject.toml"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", tag], check=True)
        subprocess.run([*git, "tag", tag], check=True)
    return repo


def test_other_dependencies_refuse_in_one_line_and_leave_no_worktree(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    one_line(ab("a", "b", str(sc), cwd=repo), "HEAD declares other dependencies than BASE",
             "+left-pad>=1", "environment of its own")
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True,
                            text=True).stdout.strip().splitlines()
    assert len(listed) == 1  # only the repository itself
    with worktrees(repo, {"b": resolve(repo, "b")}) as trees:
        why = mismatch({"A": trees["b"], "B": trees["b"]})  # the same, but left-pad is not here
        assert why is not None and "left-pad (not installed)" in why
    assert unsatisfied({"numpy>=99", 'torch>=1; extra == "training"'})[0].startswith("numpy ")


@pytest.mark.slow
@pytest.mark.mpi
def test_ab_runs_both_sides_in_rounds(tmp_path: Path) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(TINY)
    out = tmp_path / "ab"
    res = ab("HEAD", "HEAD", str(sc), "--rounds", "2", "--reruns", "0", "--alpha", "0.25", "--out",
             str(out), "--html", str(tmp_path / "ab.html"), timeout=600)
    n = 2  # --reruns 0: a round whose runs saw the machine change speed is set aside, not rerun
    order = [m.group(1) for ln in res.stderr.splitlines()
             if (m := re.match(r"# ab: round \d+/\d+ (BASE|HEAD)\b", ln))]
    assert order == ["BASE", "HEAD", "HEAD", "BASE"], res.stderr[-3000:]
    for side in ("base", "head"):
        recs = list(iter_records(out / side))
        assert sorted({r[ROUND] for r in recs}) == list(range(1, n + 1)) and len(recs) == n * 6
    # the rounds' runs render no report of their own (this revision's run has --no-report)
    assert sorted(p.name for p in (out / "rounds").glob("*/report.html")) == []
    assert "commbench-ab-" not in subprocess.run(["git", "-C", str(ROOT), "worktree", "list"],
                                                 capture_output=True, text=True).stdout
    aside = mismatched(round_speeds(out / "base"), round_speeds(out / "head"))
    if len(aside) == n:  # the machine changed speed within every round: ab says so, decides nothing
        assert res.returncode == 2 and "no round can be compared" in res.stderr.splitlines()[-1]
        return
    # ab's verdict and exit code are exactly its rule applied to the rounds it recorded
    again = compare_dirs(out / "base", out / "head", Rule(), alpha=0.25)
    lines = res.stdout.strip().splitlines()
    assert res.returncode == again.exit_code, res.stderr[-3000:]
    assert lines[-2] == render(again, 2, 0.25).splitlines()[-1]
    assert lines[-1].startswith("# wall time ") and f"in {2 * n} runs of" in lines[-1]
    for side in ("base", "head"):
        assert [r[ROUND] for r in read_meta(out / side)["ab"]["rounds"]] == list(range(1, n + 1))
    html = (tmp_path / "ab.html").read_text()
    assert "Wilcoxon signed-rank" in html and "2 rounds" in html and "Absolute times" in html
    assert "One baseline run" not in html and "Mann-Whitney U test on the raw samples" not in html
    _an_injected_slowdown_is_caught_on_its_keys_only(out / "base", tmp_path)


def _an_injected_slowdown_is_caught_on_its_keys_only(base: Path, tmp_path: Path) -> None:
    """ab's decision on rounds whose effect is known exactly: BASE's recorded rounds (their keys,
    rounds and meta) with each record's samples replaced by a fixed pattern around its median
    (so no drift or noise of the VM is left in them), and HEAD the same with every ring sample
    1.3x: ring's two keys and nothing else are slower. How small an effect real runs reveal is
    the sensitivity benchmark's figure."""
    flat, head = tmp_path / "flat-base", tmp_path / "injected-head"
    for d, factor in ((flat, 1.0), (head, 1.3)):
        d.mkdir()
        (d / "meta.json").write_text((base / "meta.json").read_text())
        with (d / "results.jsonl").open("wb") as fh:
            for rec in iter_records(base):
                m = rec["time_us_median"] * (factor if rec["algorithm"] == "ring" else 1.0)
                rec["samples_us"] = [m * (1 + 0.001 * (i % 7 - 3)) for i in range(len(rec["samples_us"]))]
                fh.write(orjson.dumps(rec) + b"\n")
    res = compare_dirs(flat, head, Rule(), alpha=0.25)
    slower = sorted(r.key for r in res.rows if r.outcome == "slower")
    assert [k[KEY.index("algorithm")] for k in slower] == ["ring", "ring"], res.rows
    assert all(r.outcome != "slower" or abs(r.decision.ratio - 1.3) < 1e-9 for r in res.rows)
    assert res.exit_code == 1


# long enough per run (6 cases of >= 2 x 0.3 s) that the signal lands inside HEAD's first run
SLOW = TINY.replace("time_budget_ms: 40", "time_budget_ms: 300")
TAG = "COMMBENCH_TEST_TAG"  # inherited by ab, its runs, mpiexec and every rank


def _tagged(tag: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(TAG) == tag and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            continue
    return out


@pytest.mark.slow
@pytest.mark.mpi
# SIGTERM (a CI job cancelled); SIGINT reaches the same handler (tests/launch/test_signals.py: both)
@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_a_signal_ends_the_run_in_flight_and_removes_the_worktrees(tmp_path: Path, sig: int) -> None:
    sc = tmp_path / "sc.yaml"
    sc.write_text(SLOW)
    out, tag = tmp_path / "ab", uuid.uuid4().hex
    env = {**clean_env(), TAG: tag}
    with (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench", "ab", "HEAD", "HEAD", str(sc),
                                 "--rounds", "2", "--reruns", "0", "--alpha", "0.25", "--out",
                                 str(out)], cwd=ROOT,
                                env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    head1 = out / "rounds" / "head-1" / "results.jsonl"
    deadline = time.monotonic() + 300
    while not (head1.exists() and head1.read_text().count("\n") >= 1):  # HEAD's ranks are measuring
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
        time.sleep(0.05)
    trees = {Path(p.cwd()) for p in _tagged(tag) if "run" in p.cmdline() and p.pid != proc.pid}
    assert len(trees) == 1, trees  # the worktree HEAD's run runs in
    proc.send_signal(sig)
    rc = proc.wait(120)
    err = (tmp_path / "err.txt").read_text()
    time.sleep(0.5)
    left = _tagged(tag)
    for p in left:  # so that a failure here leaves nothing running either
        p.kill()
    assert rc == 128 + sig, err
    assert left == [], f"processes of ab left running: {[p.cmdline() for p in left]}"
    name = signal.Signals(sig).name
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"commbench: ab: interrupted by {name} during round "), err
    assert "worktrees removed" in last and "base marked interrupted" in last.replace(", head", "")
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list", "--porcelain"],
                            capture_output=True, text=True).stdout
    for tree in trees:
        assert str(tree) not in listed and not tree.exists() and not tree.parent.exists()
    base = read_meta(out / "base")
    assert base["status"] == "interrupted" and base["signal"] == name
    assert [r[ROUND] for r in base["ab"]["rounds"]] == [1]  # BASE's first run, and nothing after
    m = re.search(r"during round (\d+), (BASE|HEAD)", last)
    assert m is not None
    stopped = read_meta(out / "rounds" / f"{m[2].lower()}-{m[1]}")  # the run in flight ended itself
    assert stopped["status"] == "interrupted" and stopped["signal"] == name


def test_ab_html_states_the_paired_rule() -> None:
    from bench.gate.compare import GateResult

    res = GateResult((Path("base"),), Path("head"), Rule(threshold=0.0, reference=True), [])
    sec = ab_section(res, rounds=7, alpha=0.01)
    text = " ".join(sec.ctx["rule_parts"])
    assert sec.template == "ab_gate.html.j2" and sec.ctx["base_label"] == "BASE"
    for words in ("Wilcoxon signed-rank", "7 rounds", "α = 0.01", "2<sup>−7</sup>", "1 + 0%",
                  "Hodges–Lehmann", "Mann-Whitney U", "<code>--relative</code>: every median",
                  "exp(estimate − lower bound)"):
        assert words in text, words


def test_a_round_whose_runs_saw_different_machines_is_run_again(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """ab's own orchestration (no MPI involved): rounds 2 and 4 have canaries 3x apart, so two
    more rounds run to reach 3 matched ones; at most ``extra`` more."""
    import bench.gate.ab as ab

    ran: list[tuple[str, int]] = []
    canary = {("head", 2): 800.0, ("base", 4): 790.0}
    monkeypatch.setattr(ab, "check_origin", lambda side: None)
    monkeypatch.setattr(ab, "run_once", lambda side, sc, rnd, d, guard=None: ran.append(
        (side.name, rnd)) or 1.0)
    monkeypatch.setattr(ab, "speed", lambda run: canary.get(
        (run.name.split("-")[0], int(run.name.split("-")[1])), 265.0))
    sides = [Side(n, "HEAD", "0" * 40, tmp_path, tmp_path / n) for n in ("base", "head")]
    said: list[str] = []
    aside = run_rounds(sides, tmp_path / "sc.yaml", 3, tmp_path / "rounds", said.append, extra=3)
    assert aside == [2, 4] and max(r for _, r in ran) == 5 and len(ran) == 10
    assert sum("set aside, one more run" in s for s in said) == 2
    ran.clear()
    canary.clear()
    canary.update({("head", r): 800.0 for r in range(1, 9)})  # every round mismatched
    aside = run_rounds(sides, tmp_path / "sc.yaml", 3, tmp_path / "rounds2", said.append, extra=2)
    assert aside == [1, 2, 3, 4, 5] and max(r for _, r in ran) == 5  # 3 + at most 2 more
