"""The HTML report: sections, several runs, failed cases, escaping, no other host."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.cli import main
from reports.render import render_report, render_run
from tests.helpers import synthetic

SMALL = synthetic.Spec(world_sizes=(1, 2, 4), sizes=tuple(8 * 8**i for i in range(6)),
                       samples=12)
HOSTILE = '<script>alert("x")</script>\' onmouseover="bad()'
EXTERNAL = re.compile(r"(?i)(?:https?|ftp|wss?|file):|(?:src|href|action|xlink:href)\s*=\s*[\"']?"
                      r"(?!#)[^\"'\s>]|url\((?!#)|@import|//[a-z0-9.-]+\.[a-z]{2,}")


def make_run(path: Path, seed: int = 0, failed: bool = False, training: bool = False,
             scenario: str = "synthetic", scale: float = 1.0) -> Path:
    spec = synthetic.Spec(**{**SMALL.__dict__, "seed": seed, "scenario": scenario})
    records = list(synthetic.collective_records(spec))
    for r in records:
        r["samples_us"] = [x * scale for x in r["samples_us"]]
        r["time_us_median"] *= scale
    if failed:
        records.append(synthetic.failed_record("ring", 4, 4096, f"timeout after 120 s {HOSTILE}"))
        records.append(synthetic.failed_record("tree", 2, 8, "rank 1 exited with code 9"))
    if training:
        records += list(synthetic.training_records())
    return synthetic.write_run(path, records, synthetic.meta(path.name, scenario))


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    run = make_run(tmp_path_factory.mktemp("one") / "run-a", failed=True, scenario=HOSTILE)
    meta = json.loads((run / "meta.json").read_text())
    meta["host"]["cpu"] = HOSTILE
    meta["commit"] = '"quoted" & <b>bold</b>'
    (run / "meta.json").write_text(json.dumps(meta))
    out = Path(render_run(run))
    return run, out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], str]:
    base = tmp_path_factory.mktemp("three")
    runs = [make_run(base / "a", seed=1), make_run(base / "b", seed=2, scale=1.3),
            make_run(base / "c", seed=3, training=True)]
    out = render_report(runs, base / "cmp.html")
    return runs, out.read_text(encoding="utf-8")


def test_render_run_writes_report_html_next_to_results(one_run: tuple[Path, str]) -> None:
    run, html = one_run
    assert (run / "report.html").is_file()
    for section in ("headline", "bandwidth", "scaling", "choose", "cases", "method"):
        assert f'<section id="{section}">' in html
    assert '<section id="memory">' not in html  # no training record: the section is hidden
    assert html.count("<svg") >= 3  # bandwidth, latency, scaling


def test_no_reference_to_any_other_host(one_run: tuple[Path, str],
                                        three_runs: tuple[list[Path], str]) -> None:
    for html in (one_run[1], three_runs[1]):
        found = EXTERNAL.findall(html)
        assert not found, f"external references: {found[:5]}"


def test_external_pattern_catches_what_it_should() -> None:
    for bad in ('<img src="x.png">', "http://example.com", '<a href="other.html">',
                "background: url(x)", "//cdn.example.org/x.js"):
        assert EXTERNAL.search(bad), bad
    assert not EXTERNAL.search('<a href="#cases">')


def test_hostile_strings_come_out_escaped(one_run: tuple[Path, str]) -> None:
    html = one_run[1]
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert 'onmouseover="bad()' not in html
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert html.count("<script>") == 1  # only the report's own table script


def test_failed_cases_render_first_with_their_error(one_run: tuple[Path, str]) -> None:
    html = one_run[1]
    assert "2 failed" in html
    cases = html[html.index('<section id="cases">'):]
    first_row = cases[cases.index("<tbody>"):].split("</tr>")[0]
    assert 'class="failed"' in first_row
    assert "rank 1 exited with code 9" in cases or "timeout after 120 s" in cases


def test_world_size_1_is_out_of_what_to_choose_and_scaling(one_run: tuple[Path, str]) -> None:
    html = one_run[1]
    for sec in ("choose", "scaling"):
        body = html[html.index(f'<section id="{sec}">'):]
        body = body[:body.index("</section>")]
        assert "world size 1<" not in body  # no What to choose table of world size 1
        assert not re.search(r"<td>[\d.]+\w*B</td><td class=\"n\">1</td>", body)  # no scaling row
        assert re.search(r"<td>[\d.]+\w*B</td><td class=\"n\">2</td>", body) or sec == "choose"


def test_three_runs_overlay_and_ratio_table(three_runs: tuple[list[Path], str]) -> None:
    _, html = three_runs
    assert '<section id="comparison">' in html
    comparison = html[html.index('<section id="comparison">'):html.index('<section id="cases">')]
    assert "b / a" in comparison and "c / a" in comparison
    rows = comparison[comparison.index("<tbody>"):].split("</tr>")[:-1]
    b_over_a = [float(re.findall(r'data-v="([\d.]*)"', row)[-2]) for row in rows]
    assert len(b_over_a) == 3 * 6 * 4  # worlds x sizes x algorithms
    assert all(1.2 < r < 1.45 for r in b_over_a)  # run b's samples are scaled by 1.3
    bandwidth = html[html.index('<section id="bandwidth">'):html.index('<section id="scaling">')]
    for label in ("ring [a]", "ring [b]", "ring [c]"):
        assert label in bandwidth  # legend entries of overlaid runs


def test_memory_section_renders_training_records(three_runs: tuple[list[Path], str]) -> None:
    html = three_runs[1]
    memory = html[html.index('<section id="memory">'):html.index('<section id="choose">')]
    assert "<svg" in memory and "zero1" in memory and "optimizer state" in memory


def test_what_to_choose_names_a_winner_and_margin(one_run: tuple[Path, str]) -> None:
    choose = one_run[1][one_run[1].index('<section id="choose">'):]
    choose = choose[:choose.index("</section>")]
    # the α-β model makes naive (lowest latency·steps) win small sizes, tree large ones at p>1
    assert re.search(r"<td>\d+B – [\d.]+\w+</td><td>\w+</td>", choose)
    assert "× native" in choose


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path / "r")
    out = tmp_path / "x" / "r.html"
    assert main(["report", str(run), "-o", str(out), "--max-figures", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_report_command_rejects_missing_and_bad_runs(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "o.html")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "meta.json").write_text(json.dumps({"schema_version": 99}))
    assert main(["report", str(bad), "-o", str(tmp_path / "o.html")]) == 2
    err = capsys.readouterr().err
    assert "schema_version 99" in err and err.count("\n") == 1


def test_empty_and_all_failed_runs_still_render(tmp_path: Path) -> None:
    empty = Path(render_run(synthetic.write_run(tmp_path / "empty", []))).read_text()
    assert "<strong>No records</strong>" in empty
    for hidden in ("bandwidth", "scaling", "choose", "memory"):
        assert f'<section id="{hidden}">' not in empty
    failed = synthetic.write_run(tmp_path / "failed",
                                 [synthetic.failed_record("ring", 2, 8, "rank 1 died")])
    html = Path(render_run(failed)).read_text()
    assert "1 failed" in html and "rank 1 died" in html and "<svg" not in html
