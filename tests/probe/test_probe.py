"""The link probe: its rounds, its outlier rule, a real probe under mpiexec, bad input, reports
and exports of probe runs, and calibration from probe records (the confirmation pass:
test_probe_confirm.py). Exact quantities only: synthetic records come from a seeded
generator, and the MPI checks count messages and delays, never time."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

from bench.costmodel.profile import load_profile
from bench.measure.pairs import rounds
from bench.probe.fit import fit_probe
from bench.probe.links import from_launch
from bench.probe.outliers import find, flagged
from bench.store.records import load_results, read_meta
from tests.conftest import ROOT, commbench, run_mpi
from tests.helpers.probe_records import ALPHA, BETA, LAYOUT, SlowNode, probe_run, synthetic


@pytest.mark.parametrize("p", range(2, 65))
def test_rounds_pair_every_pair_exactly_once(p: int) -> None:
    sched = rounds(p)
    assert len(sched) == (p - 1 if p % 2 == 0 else p)
    pairs = [pair for rnd in sched for pair in rnd]
    assert sorted(pairs) == [(a, b) for a in range(p) for b in range(a + 1, p)]
    for rnd in sched:
        ranks = [r for pair in rnd for r in pair]
        assert len(ranks) == len(set(ranks))  # disjoint: every rank in at most one pair
        assert len(rnd) == p // 2  # all but one rank busy (odd p: a bye)


def test_one_rank_has_no_rounds() -> None:
    with pytest.raises(ValueError, match="at least 2 ranks"):
        rounds(1)





def test_clean_records_with_noise_name_nothing() -> None:
    for seed in range(5):
        assert find(synthetic(LAYOUT, seed), 0.25) == []


def test_a_slow_node_is_named_by_host_and_ranks() -> None:
    recs = synthetic(LAYOUT, delay=SlowNode(LAYOUT, 5, 50e-6))
    found = find(recs, 0.25)
    assert [n for w, n in flagged(found) if w == "node"] == ["node 5 (host h, ranks 10-11)"]
    assert [n for w, n in flagged(found) if w == "link"] == []  # every slow link ends on node 5
    assert {o.link_class for o in found if o.what == "node"} == {"inter", "intra"}  # its own pair too


def test_a_slow_link_is_named_and_no_node() -> None:
    found = find(synthetic(LAYOUT, slow_link=(3, 12)), 0.25)
    assert [n for w, n in flagged(found) if w == "node"] == []
    assert [n for w, n in flagged(found) if w == "link"] == ["rank 3 (host h) - rank 12 (host h)"]


def test_the_threshold_holds_back_a_smaller_slowdown() -> None:
    recs = synthetic(LAYOUT, slow_link=(3, 12))  # twice as slow: +100 %
    assert [n for w, n in flagged(find(recs, 0.9)) if w == "link"] == [
        "rank 3 (host h) - rank 12 (host h)"]
    assert find(recs, 1.1) == []



def test_calibration_from_probe_records_recovers_alpha_and_beta(tmp_path: Path) -> None:
    from bench.costmodel.calibrate_cli import calibrate_command

    recs = synthetic(LAYOUT, noise=0.03)
    got = fit_probe(recs)
    for cls in ("intra", "inter"):
        assert got.values[f"{cls}.beta"] == pytest.approx(BETA[cls], rel=0.02)
        assert got.values[f"{cls}.alpha"] == pytest.approx(ALPHA[cls], rel=0.05)
    out = tmp_path / "mine.yaml"
    args = argparse.Namespace(runs=[probe_run(tmp_path, recs)], output=out, base=None, name=None)
    assert calibrate_command(args, lambda line: None) == 0
    prof = load_profile(out)
    for cls in ("intra", "inter"):
        assert prof.links[cls].beta == pytest.approx(BETA[cls], rel=0.02)
        assert prof.links[cls].alpha == pytest.approx(ALPHA[cls], rel=0.05)
    assert sorted(prof.fitted["probe"]["parameters"]) == [
        "inter.alpha", "inter.beta", "intra.alpha", "intra.beta"]
    assert set(prof.fitted["not_fitted"]) == {"gamma", "overhead", "hot", "mpi"}
    assert "too few" in prof.fitted["not_fitted"]["mpi"]  # 2 sizes: no MPI switch to test


def test_probe_on_one_rank_is_one_line_exit_2(tmp_path: Path) -> None:
    res = commbench("probe", "-n", "1", "--out", str(tmp_path / "p"))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "commbench: probe: world_size: a probe needs at least 2 ranks (one pair), got 1"]
    assert not (tmp_path / "p").exists()


def test_emulate_needs_a_topology(tmp_path: Path) -> None:
    res = commbench("probe", "--emulate", "emulated-slow", "--out", str(tmp_path / "p"))
    assert res.returncode == 2
    assert res.stderr.strip() == "commbench: probe: --emulate PROFILE and --topology SPEC go together"


@pytest.mark.mpi
def test_probe_on_one_rank_inside_a_job_is_one_line_exit_2(tmp_path: Path) -> None:
    res = run_mpi(1, ROOT / "bench" / "__main__.py", "probe", "--out", str(tmp_path / "p"))
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        "commbench: probe: a probe needs at least 2 ranks (one pair); this job has 1"]


@pytest.mark.mpi
def test_four_rank_probe_writes_every_pair_with_its_class(tmp_path: Path) -> None:
    out = tmp_path / "probe"
    res = commbench("probe", "-n", "4", "--ranks-per-node", "2", "--sizes", "8B,1KiB",
                    "--repeats", "3", "--window", "2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "probe: round 3/3: 2 pairs" in res.stderr
    df = load_results(out)
    assert set(df["kind"]) == {"probe"} and set(df["phase"]) <= {"tournament", "confirm"}
    df = df[df["phase"] == "tournament"]  # a stall flagged here adds the confirmation's records
    assert len(df) == 6 * 2
    got = {(int(r.src), int(r.dst), int(r.nbytes)): r.link_class for r in df.itertuples()}
    want = {(a, b, n): "intra" if a // 2 == b // 2 else "inter"
            for a in range(4) for b in range(a + 1, 4) for n in (8, 1024)}
    assert got == want
    assert all(len(s) == 3 for s in df["latency_samples_us"])
    assert (df["uni_gbps"] > 0).all() and not df["emulated"].any()
    assert read_meta(out)["status"] == "ok"
    assert "Link probe" in (out / "report.html").read_text()
    assert res.stdout.strip().splitlines()[-1] == str(out / "report.html")


@pytest.mark.mpi
def test_injected_slow_node_is_waited_before_every_message_and_confirmed() -> None:
    res = run_mpi(6, ROOT / "tests" / "mpi" / "probe_delay.py")
    assert res.returncode == 0, res.stderr


def test_a_probe_is_a_scenario_kind() -> None:
    from bench.collective.scenario import ScenarioError, parse_scenario

    sc = parse_scenario({"kind": "probe", "world_size": 8, "ranks_per_node": 2, "sizes": ["8B"]})
    assert sc.kind == "probe" and sc.settings().sizes == (8,) and sc.world_sizes == [8]
    with pytest.raises(ScenarioError, match="ranks_per_node: 3 does not divide world size 8"):
        parse_scenario({"kind": "probe", "world_size": 8, "ranks_per_node": 3})
    with pytest.raises(ScenarioError, match="leave ranks_per_node out"):
        parse_scenario({"kind": "probe", "ranks_per_node": 2,
                        "emulate": {"profile": "emulated-slow", "topology": "4x2"}})


# The confirmation pass: suspects, references and the verdict, from synthetic records.


def _report(run: Path, *extra: str) -> str:
    from bench.cli import main

    out = run / "report.html"
    assert main(["report", str(run), *extra, "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_a_probe_missing_pairs_gives_blank_cells_and_says_how_many(tmp_path: Path) -> None:
    from bench.probe.matrix import missing_pairs, node_matrix

    five = from_launch(["h"] * 5, 1)  # 5 nodes of 1 rank: round 0 is 2 pairs, rank 0 sits out
    recs = [r for r in synthetic(five) if r["round"] == 0]  # an interrupt after round 1
    assert sorted({(r["src"], r["dst"]) for r in recs}) == rounds(5)[0] == [(1, 4), (2, 3)]
    m = node_matrix(recs, "latency_us_median", 8)
    assert m.shape == (5, 5)
    assert [(int(i), int(j)) for i, j in zip(*np.nonzero(~np.isnan(m)))] == [
        (1, 4), (2, 3), (3, 2), (4, 1)]
    assert missing_pairs(recs, 8) == missing_pairs(recs, 4 << 20) == (8, 10)
    html = _report(probe_run(tmp_path, recs))
    assert ("8 of 10 pairs missing at 8B; 8 of 10 pairs missing at 4MiB." in
            " ".join(html[html.index('id="probe-missing"'):].split()))
    assert html.count("<svg") == 2  # both heatmaps


def test_a_corrupt_line_in_a_probe_run_leaves_one_pair_missing(tmp_path: Path) -> None:
    run = probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 1)))
    lines = (run / "results.jsonl").read_text().splitlines()
    lines[5] = lines[5][: len(lines[5]) // 2]  # cut in the middle of the file
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    text = " ".join(_report(run).split())
    assert "results.jsonl skipped): 1 of 6 pairs missing at " in text
    assert 'id="probe-missing"' in text


def test_every_pair_iteration_starts_from_the_pairs_barrier_on_both_ranks() -> None:
    # The harness times the probe's point-to-point cases: barrier, clock, the case, clock, on
    # both ranks; no message before the rank's own clock; the sample is the pair's max.
    res = run_mpi(2, ROOT / "tests" / "mpi" / "probe_sync.py")
    assert res.returncode == 0, res.stderr


NOT_RESUMED = ("a probe cannot be resumed (it measures the cluster as it is now): run it again "
               "with a new --out")


def test_a_probe_is_never_offered_resume(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    assert main(["probe", "-n", "2", "--out", str(full)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"commbench: probe: --out {full}: not empty; {NOT_RESUMED}"]
    yaml_file = tmp_path / "probe.yaml"
    yaml_file.write_text("kind: probe\nworld_size: 2\n")
    assert main(["run", str(yaml_file), "--resume", str(full)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"commbench: probe: --resume: {NOT_RESUMED}"]


def test_an_interrupted_probe_says_to_run_it_again(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from bench.launch.selflaunch import JobResult, Sweep
    from bench.probe.launch import INTERRUPTED

    run = probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 1))[:5])

    class Guard:
        name, exit_code = "SIGINT", 130

    job = JobResult(4, -2, 1.0, {"case": "probe round 2/3"}, signal="SIGINT")
    assert Sweep(run, read_meta(run), **INTERRUPTED)._interrupted(Guard(), job) == 130
    assert capsys.readouterr().err.splitlines() == [
        f"commbench: interrupted by SIGINT during probe round 2/3; 5 records kept in {run} "
        f"(commbench report {run} shows them); {NOT_RESUMED}"]
    meta = read_meta(run)
    assert (meta["status"], meta["interrupted_case"]) == ("interrupted", "probe round 2/3")


def test_every_yaml_example_of_the_probe_docs_loads() -> None:
    import yaml

    from bench.collective.scenario import parse_scenario

    text = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S)
    assert len(blocks) == 2
    got = [parse_scenario(yaml.safe_load(b), "docs/probe.md") for b in blocks]
    assert [(sc.kind, sc.world_size, sc.emulate is not None) for sc in got] == [
        ("probe", 16, False), ("probe", 16, True)]


def test_probe_help_states_the_rule_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    assert main(["probe", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "3x" not in text and "z = Phi^-1(1 - 0.05 / tests)" in text
    for flag, default in (("at least 3", 10), ("messages per bandwidth sample", 16),
                          ("untimed turns before the samples", 1)):
        assert f"{flag}" in text and f"(default {default})" in text
    assert "each at least 1 B (default 8B,4MiB" in text


@pytest.mark.parametrize(("argv", "line"), [
    (["-n", "0"], "argument -n/--world-size: '0': a world size from 1 to 2^20 ranks"),
    (["-n", "1"], "world_size: a probe needs at least 2 ranks (one pair), got 1"),
    (["--sizes", "0B"], "sizes.0: a size must be at least 1 B, got '0B'"),
    (["--sizes", "8B,0"], "sizes.1: a size must be at least 1 B, got '0'"),
])
def test_bad_probe_flags_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], line: str) -> None:
    from bench.cli import main

    assert main(["probe", *argv, "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"commbench: probe: {line}"]
    assert not (tmp_path / "p").exists()


def test_a_probe_only_report_shows_only_what_it_holds(tmp_path: Path) -> None:
    html = _report(probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 2))))
    sections = re.findall(r'<section id="([a-z_-]+)">', html)
    assert sections == ["probe", "method"]
    method = html[html.index('<section id="method">'):]
    assert "maximum over ranks" not in method and "How a number is measured" not in method
    assert "link probe records: 12 " in " ".join(method.split())


def test_export_gives_probe_records_a_group_and_json_nested_columns(tmp_path: Path) -> None:
    import csv
    import json

    from bench.store.export import export

    recs = synthetic(from_launch(["h"] * 4, 2))
    for r in recs:
        r.update(emulated=True, emulation={"slow": [{"node": 1}]}, profile={"name": "x"})
    run = probe_run(tmp_path, recs)
    out, n = export(run, "pytest-benchmark")
    groups = sorted({b["group"] for b in json.loads(out.read_text())["benchmarks"]})
    assert n == 12 and groups == ["probe inter p=4", "probe intra p=4"]
    out, _ = export(run, "csv")
    rows = list(csv.DictReader(out.open()))
    assert {json.dumps(json.loads(r["emulation"])) for r in rows} == {'{"slow": [{"node": 1}]}'}
    assert {r["profile"] for r in rows} == {'{"name": "x"}'}
    assert json.loads(rows[0]["latency_samples_us"]) == recs[0]["latency_samples_us"]


def test_compare_refuses_a_probe_run_in_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    run = probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 2)))
    assert main(["compare", str(run), str(run)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"commbench: compare: {run}: a link probe run; compare reads collective and "
                   "training runs (a probe's pairs have no key here): compare probes side by "
                   "side with `commbench report A B`"]


def test_probe_flags_are_the_scenarios_fields_with_their_defaults() -> None:
    from bench.cli import build_parser
    from bench.commands.probe import NOT_FLAGS, scenario_of
    from bench.probe.scenario import ProbeScenario

    parser = build_parser()
    args = parser.parse_args(["probe"])
    assert set(args.probe_fields) == set(ProbeScenario.model_fields) - set(NOT_FLAGS)
    assert scenario_of(args) == ProbeScenario()  # no flag: every default the scenario's
    args = parser.parse_args(["probe", "-n", "4", "--confirm-max", "0", "--sizes", "8B,1KiB",
                              "--ranks-per-node", "2", "--round-timeout-s", "9.5"])
    assert scenario_of(args) == ProbeScenario(world_size=4, confirm_max=0, sizes=[8, 1024],
                                              ranks_per_node=2, round_timeout_s=9.5)
