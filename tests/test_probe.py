"""The link probe: its rounds, its outlier rule, a real probe under mpiexec, bad input, and
calibration from probe records. Exact quantities only: synthetic records come from a seeded
generator, and the MPI checks count messages and delays, never time."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

from bench.probe.confirm import Check, Confirm, plan
from bench.probe.findings import findings
from bench.probe.fit import fit_probe
from bench.probe.links import Layout, flows, from_launch
from bench.probe.measure import Samples, Settings
from bench.probe.outliers import find, slow_nodes, unexplained_links
from bench.probe.record import block_record, pair_record
from bench.probe.schedule import rounds
from bench.probe.summary import summary_lines
from bench.probe.verdict import decide
from bench.records import SCHEMA_VERSION, ResultWriter, load_results, read_meta, write_meta
from bench.topo.profile import load_profile
from tests.conftest import ROOT, commbench, run_mpi

ALPHA = {"intra": 2e-6, "inter": 2e-5}  # s
BETA = {"intra": 8e9, "inter": 1e9}  # bytes/s
SETTINGS = Settings((8, 4 << 20), repeats=10, window=16, warmup=1)


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


class SlowNode:
    """A LinkDelay: every message to or from ``node`` waits ``extra_s`` more."""

    def __init__(self, layout: Layout, node: int, extra_s: float) -> None:
        self.layout, self.node, self.extra_s = layout, node, extra_s

    def delay_s(self, src: int, dst: int, nbytes: int, flows: int = 1) -> float:
        hit = self.node in (self.layout.node_of[src], self.layout.node_of[dst])
        return self.extra_s if hit else 0.0

    def describe(self) -> dict[str, object]:
        return {"emulated": True, "emulation": {"slow_node": self.node}}


def synthetic(layout: Layout, seed: int = 1, noise: float = 0.05, delay: SlowNode | None = None,
              slow_link: tuple[int, int] | None = None, factor: float = 2.0,
              stalled: tuple[tuple[int, int], ...] = ()) -> list[dict[str, object]]:
    """Records of a probe of ``layout`` as the α-β model times it, each sample times a
    log-normal noise factor; ``delay`` adds its wait before every message, ``slow_link``
    makes one link ``factor`` times as slow, ``stalled`` pairs have every sample 20 times as
    long (ranks descheduled for the whole pair)."""
    rng = np.random.default_rng(seed)
    out = []
    w = SETTINGS.window
    for i, rnd in enumerate(rounds(layout.world)):
        load = flows(layout, rnd)
        for a, b in rnd:
            cls = layout.link_class(a, b)
            for n in SETTINGS.sizes:
                d = delay.delay_s(a, b, n) if delay else 0.0
                f = factor if slow_link == (a, b) else 1.0
                msg = f * (ALPHA[cls] + n / BETA[cls]) + d
                base = {"latency_us": msg, "uni_us": w * (msg - f * ALPHA[cls] - d) + f * ALPHA[cls]
                        + w * d, "bi_us": w * (msg - f * ALPHA[cls] - d) + f * ALPHA[cls] + w * d}
                stall = 20.0 if (a, b) in stalled else 1.0
                s = {k: tuple(stall * float(v) * 1e6 * rng.lognormal(0, noise, SETTINGS.repeats))
                     for k, v in base.items()}
                out.append(pair_record(layout, a, b, load[(a, b)], i,
                                       Samples(n, s["latency_us"], s["uni_us"], s["bi_us"]),
                                       SETTINGS, {"run_id": "synthetic"}))
    return out


LAYOUT = from_launch(["h"] * 16, 2)  # 8 virtual nodes of 2 ranks


def test_clean_records_with_noise_name_nothing() -> None:
    for seed in range(5):
        assert find(synthetic(LAYOUT, seed), 0.25) == []


def test_a_slow_node_is_named_by_host_and_ranks() -> None:
    recs = synthetic(LAYOUT, delay=SlowNode(LAYOUT, 5, 50e-6))
    found = find(recs, 0.25)
    assert slow_nodes(found) == ["node 5 (host h, ranks 10-11)"]
    assert unexplained_links(found) == []  # every slow link ends on node 5
    assert {o.link_class for o in found if o.what == "node"} == {"inter", "intra"}  # its own pair too


def test_a_slow_link_is_named_and_no_node() -> None:
    found = find(synthetic(LAYOUT, slow_link=(3, 12)), 0.25)
    assert slow_nodes(found) == []
    assert unexplained_links(found) == ["rank 3 (host h) - rank 12 (host h)"]


def test_the_threshold_holds_back_a_smaller_slowdown() -> None:
    recs = synthetic(LAYOUT, slow_link=(3, 12))  # twice as slow: +100 %
    assert unexplained_links(find(recs, 0.9)) == ["rank 3 (host h) - rank 12 (host h)"]
    assert find(recs, 1.1) == []


def _probe_run(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    run = tmp_path / "probe"
    write_meta(run, {"schema_version": SCHEMA_VERSION, "run_id": "probe", "source": "commbench",
                     "scenario": {"name": "probe", "kind": "probe", "threshold": 0.25}})
    with ResultWriter(run, durable=False) as wr:
        for r in records:
            wr.write(r)
    return run


def test_calibration_from_probe_records_recovers_alpha_and_beta(tmp_path: Path) -> None:
    from bench.topo.calibrate_cli import calibrate_command

    recs = synthetic(LAYOUT, noise=0.03)
    got = fit_probe(recs)
    for cls in ("intra", "inter"):
        assert got.values[f"{cls}.beta"] == pytest.approx(BETA[cls], rel=0.02)
        assert got.values[f"{cls}.alpha"] == pytest.approx(ALPHA[cls], rel=0.05)
    out = tmp_path / "mine.yaml"
    args = argparse.Namespace(runs=[_probe_run(tmp_path, recs)], output=out, base=None, name=None)
    assert calibrate_command(args, lambda line: None) == 0
    prof = load_profile(out)
    for cls in ("intra", "inter"):
        assert prof.links[cls].beta == pytest.approx(BETA[cls], rel=0.02)
        assert prof.links[cls].alpha == pytest.approx(ALPHA[cls], rel=0.05)
    assert sorted(prof.fitted["probe"]["parameters"]) == [
        "inter.alpha", "inter.beta", "intra.alpha", "intra.beta"]
    assert set(prof.fitted["not_fitted"]) == {"gamma", "overhead"}


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
    from bench.scenario import ScenarioError, parse_scenario

    sc = parse_scenario({"kind": "probe", "world_size": 8, "ranks_per_node": 2, "sizes": ["8B"]})
    assert sc.kind == "probe" and sc.settings().sizes == (8,) and sc.world_sizes == [8]
    with pytest.raises(ScenarioError, match="ranks_per_node: 3 does not divide world size 8"):
        parse_scenario({"kind": "probe", "world_size": 8, "ranks_per_node": 3})
    with pytest.raises(ScenarioError, match="leave ranks_per_node out"):
        parse_scenario({"kind": "probe", "ranks_per_node": 2,
                        "emulate": {"profile": "emulated-slow", "topology": "4x2"}})


# The confirmation pass: suspects, references and the verdict, from synthetic records.

ALL_TESTS = tuple((m, n) for m in ("latency", "uni", "bi") for n in SETTINGS.sizes)
JITTER = (1.0, 1.02, 0.98, 1.01, 0.99)  # a block's samples: its median is exactly its level


def confirmation(check: Check, suspect: tuple[float, ...], reference: tuple[float, ...],
                 base_us: float = 100.0) -> list[dict[str, object]]:
    """Records of the pass for ``check``: each block's samples ``base_us`` x its level x JITTER
    (the suspect's blocks at ``suspect`` levels, the reference's at ``reference``)."""
    settings = Settings(check.sizes, len(JITTER), SETTINGS.window, SETTINGS.warmup)
    out = []
    for role, pair, levels in (("suspect", check.pair, suspect),
                               ("reference", check.reference, reference)):
        for n in check.sizes:
            blocks = [Samples(n, *[tuple(base_us * f * j for j in JITTER)] * 3) for f in levels]
            out.append(block_record(LAYOUT, *pair, blocks, settings, check.fields(role, 1)))
    return out


def test_a_stalled_link_is_suspected_and_cleared_when_measured_alone() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))  # every sample of the pair 20 times as long
    assert unexplained_links(find(recs, 0.25)) == ["rank 3 (host h) - rank 12 (host h)"]
    assert summary_lines(recs, 0.25)[-2].startswith(  # no pass: named on the tournament alone
        "probe: slow link: rank 3 (host h) - rank 12 (host h): bi 4MiB +")
    assert summary_lines(recs, 0.25)[-2].endswith("(tournament only: no confirmation pass)")
    got = plan(recs, Confirm())
    assert got.over_limit == got.no_reference == ()
    (check,) = got.checks
    assert (check.index, check.name, check.what, check.link_class, check.pair, check.tests) == (
        0, "rank 3 (host h) - rank 12 (host h)", "link", "inter", (3, 12), ALL_TESTS)
    assert LAYOUT.link_class(*check.reference) == "inter" and not {3, 12} & set(check.reference)
    recs += confirmation(check, (1, 1, 1), (1, 1, 1, 1))  # alone, it is as fast as its reference
    (v,) = decide(recs, 0.25)
    assert not v.confirmed and [t.excess for t in v.retests] == [0.0] * 6
    assert [t.block_excess for t in v.retests] == [(0.0, 0.0, 0.0)] * 6
    (f,) = findings(recs, 0.25)
    assert (f.status, f.named) == ("cleared", False)
    lines = summary_lines(recs, 0.25)
    assert lines[-2].startswith("probe: cleared: rank 3 (host h) - rank 12 (host h): flagged in "
                                "the tournament (")
    assert lines[-1].startswith("probe: no slow node or link (1 flagged in the tournament, 1 "
                                "cleared when re-measured alone)")


def test_a_slow_link_is_confirmed_when_measured_alone() -> None:
    recs = synthetic(LAYOUT, slow_link=(3, 12))
    (check,) = plan(recs, Confirm()).checks
    recs += confirmation(check, (2, 2, 2), (1, 1, 1, 1))
    (v,) = decide(recs, 0.25)
    assert v.confirmed and all(t.slow for t in v.retests)
    assert [t.excess for t in v.retests] == [1.0] * 6
    assert [t.block_excess for t in v.retests] == [(1.0, 1.0, 1.0)] * 6
    assert [(f.name, f.status) for f in findings(recs, 0.25)] == [
        ("rank 3 (host h) - rank 12 (host h)", "confirmed")]


def test_a_slow_node_is_confirmed_through_one_of_its_links() -> None:
    recs = synthetic(LAYOUT, delay=SlowNode(LAYOUT, 5, 50e-6))
    (check,) = plan(recs, Confirm()).checks
    assert (check.name, check.what, check.link_class) == (
        "node 5 (host h, ranks 10-11)", "node", "inter")
    assert check.tests == (("latency", 8), ("uni", 8), ("bi", 8))  # flagged at 8 B only
    assert {10, 11} & set(check.pair) and not {10, 11} & set(check.reference)
    recs += confirmation(check, (3, 3, 3), (1, 1, 1, 1))
    (f,) = findings(recs, 0.25)
    assert (f.name, f.status, [t.excess for t in f.verdict.retests]) == (
        "node 5 (host h, ranks 10-11)", "confirmed", [2.0] * 3)
    assert len(f.explained) > 0  # its slow links go with it
    assert any(line.startswith("probe: slow node: node 5 (host h, ranks 10-11): inter bi 8B +")
               and f"; confirmed alone against ranks {check.reference[0]}-{check.reference[1]}: "
               "latency 8B +200%, uni 8B +200%, bi 8B +200%" in line
               for line in summary_lines(recs, 0.25))


def test_a_host_that_slows_down_mid_check_moves_the_reference_too() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))
    (check,) = plan(recs, Confirm()).checks
    # R S R S R S R at host speeds 1 1 1 3 3 3 3: pooled, the suspect looks 50 % slower (the
    # medians of 15 and 20 samples: 3 x 0.99 against (1.02 + 3 x 0.98) / 2), but block by
    # block only the one measured between a fast and a slow reference block is
    recs += confirmation(check, (1, 3, 3), (1, 1, 3, 3))
    (v,) = decide(recs, 0.25)
    t = v.retests[0]
    assert t.excess == pytest.approx(2.97 / 1.98 - 1, abs=1e-12) and t.excess > 0.25
    assert t.block_excess == pytest.approx((0.0, 0.5, 0.0), abs=1e-12)
    assert not v.confirmed


def test_one_stalled_block_does_not_confirm() -> None:
    recs = synthetic(LAYOUT, stalled=((3, 12),))
    (check,) = plan(recs, Confirm()).checks
    recs += confirmation(check, (1, 20, 1), (1, 1, 1, 1))
    (v,) = decide(recs, 0.25)
    assert [t.block_excess for t in v.retests] == [(0.0, 19.0, 0.0)] * 6
    assert [t.excess for t in v.retests] == pytest.approx([0.01] * 6, abs=1e-12)  # 8th of 15
    assert not v.confirmed


def test_the_pass_re_measures_at_most_its_limit() -> None:
    stalled = ((3, 12), (0, 9), (4, 6), (1, 14))
    got = plan(synthetic(LAYOUT, stalled=stalled), Confirm(max_suspects=2))
    assert [c.pair for c in got.checks] == [(3, 12), (4, 6)]  # most significant first
    assert sorted(got.over_limit) == ["rank 0 (host h) - rank 9 (host h)",
                                      "rank 1 (host h) - rank 14 (host h)"]
    for c in got.checks:
        assert not set(c.reference) & {r for p in stalled for r in p}  # a reference never a suspect
    recs = synthetic(LAYOUT, stalled=stalled)
    for c in got.checks:
        recs += confirmation(c, (1, 1, 1), (1, 1, 1, 1))
    assert sorted((f.name, f.status, f.named) for f in findings(recs, 0.25)) == [
        ("rank 0 (host h) - rank 9 (host h)", "not re-measured", False),
        ("rank 1 (host h) - rank 14 (host h)", "not re-measured", False),
        ("rank 3 (host h) - rank 12 (host h)", "cleared", False),
        ("rank 4 (host h) - rank 6 (host h)", "cleared", False)]
    assert sum(line.startswith("probe: flagged, not re-measured (over the pass's limit")
               for line in summary_lines(recs, 0.25)) == 2
    assert plan(synthetic(LAYOUT, stalled=stalled), Confirm(max_suspects=0)).checks == ()


# QA's defects: each test below failed before its fix.

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
    html = _report(_probe_run(tmp_path, recs))
    assert ("8 of 10 pairs missing at 8B; 8 of 10 pairs missing at 4MiB." in
            " ".join(html[html.index('id="probe-missing"'):].split()))
    assert html.count("<svg") == 2  # both heatmaps


def test_a_corrupt_line_in_a_probe_run_leaves_one_pair_missing(tmp_path: Path) -> None:
    run = _probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 1)))
    lines = (run / "results.jsonl").read_text().splitlines()
    lines[5] = lines[5][: len(lines[5]) // 2]  # cut in the middle of the file
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    text = " ".join(_report(run).split())
    assert "results.jsonl skipped): 1 of 6 pairs missing at " in text
    assert 'id="probe-missing"' in text


def test_bi_windows_start_from_a_handshake_on_both_ranks() -> None:
    # The lower rank reads its clock only after the higher one is ready, and neither posts its
    # window before the go it sends right after: the exact event order of every turn, both ranks.
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
    from bench.probe.launch import probe_sweep
    from bench.selflaunch import JobResult

    run = _probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 1))[:5])

    class Guard:
        name, exit_code = "SIGINT", 130

    job = JobResult(4, -2, 1.0, {"case": "probe round 2/3"}, signal="SIGINT")
    assert probe_sweep(run, read_meta(run))._interrupted(Guard(), job) == 130
    assert capsys.readouterr().err.splitlines() == [
        f"commbench: interrupted by SIGINT during probe round 2/3; 5 records kept in {run} "
        f"(commbench report {run} shows them); {NOT_RESUMED}"]
    meta = read_meta(run)
    assert (meta["status"], meta["interrupted_case"]) == ("interrupted", "probe round 2/3")


def test_every_yaml_example_of_the_probe_docs_loads() -> None:
    import yaml

    from bench.scenario import parse_scenario

    text = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S)
    assert len(blocks) == 2
    got = [parse_scenario(yaml.safe_load(b), "docs/probe.md") for b in blocks]
    assert [(sc.kind, sc.world_size, sc.emulate is not None) for sc in got] == [
        ("probe", 16, False), ("probe", 16, True)]


def test_probe_help_states_the_rule_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "3x" not in text and "z = Phi^-1(1 - 0.05 / tests)" in text
    for flag, default in (("at least 3", 10), ("messages per bandwidth sample", 16),
                          ("untimed turns before the samples", 1)):
        assert f"{flag}" in text and f"(default {default})" in text
    assert "each at least 1 B (default 8B,4MiB" in text


@pytest.mark.parametrize(("argv", "line"), [
    (["-n", "0"], "world_size: a probe needs at least 2 ranks (one pair), got 0"),
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
    html = _report(_probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 2))))
    sections = re.findall(r'<section id="([a-z_-]+)">', html)
    assert sections == ["probe", "method"]
    method = html[html.index('<section id="method">'):]
    assert "maximum over ranks" not in method and "How a number is measured" not in method
    assert "link probe records: 12 " in " ".join(method.split())


def test_export_gives_probe_records_a_group_and_json_nested_columns(tmp_path: Path) -> None:
    import csv
    import json

    from bench.export import export

    recs = synthetic(from_launch(["h"] * 4, 2))
    for r in recs:
        r.update(emulated=True, emulation={"slow": [{"node": 1}]}, profile={"name": "x"})
    run = _probe_run(tmp_path, recs)
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

    run = _probe_run(tmp_path, synthetic(from_launch(["h"] * 4, 2)))
    assert main(["compare", str(run), str(run)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"commbench: compare: {run}: a link probe run; compare reads collective and "
                   "training runs (a probe's pairs have no key here): compare probes side by "
                   "side with `commbench report A B`"]
