"""The report in a real browser: headless Chromium opens it from file:// with no console message,
its table script runs, and its figures are drawn (screenshot pixels in the plot colours); the
DOM it builds holds the headline first, a figure for every measured collective, and no ``nan``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from reports.figures import PALETTE
from reports.render import render_report
from tests.helpers import synthetic

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
         "--hide-scrollbars", "--virtual-time-budget=3000")


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium on this machine (`make test` installs Debian's chromium where it "
                "can: apt-get as root)")


def open_page(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [browser(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def console(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]


COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "reduce_scatter")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    spec = synthetic.Spec(world_sizes=(1, 2, 4), samples=12)
    recs = [*({**r, "collective": c} for c in COLLECTIVES
              for r in synthetic.collective_records(spec)),
            synthetic.failed_record("ring", 4, 64, "timeout")]
    run = synthetic.write_run(base / "run", recs)
    return render_report([run], base / "report.html")


def test_console_detection_catches_a_script_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>notDefined();</script>")
    assert any("notDefined" in ln for ln in console(open_page(bad, tmp_path, "--dump-dom")))


def test_report_has_no_console_messages_and_its_script_runs(page: Path, tmp_path: Path) -> None:
    proc = open_page(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console(proc) == []
    assert 'class="sortable"' in proc.stdout  # added to every header cell by table.js


def test_figures_are_drawn(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    proc = open_page(page, tmp_path, "--window-size=1400,1800", f"--screenshot={shot}")
    assert shot.is_file(), proc.stderr[-2000:]
    assert console(proc) == []
    rgb = (image.imread(str(shot))[..., :3] * 255).astype(int)
    assert rgb.shape[:2] == (1800, 1400)
    non_white = (rgb.min(axis=2) < 240).mean()
    assert non_white > 0.03, f"page nearly blank ({non_white:.1%} non-white)"
    for colour in PALETTE[:2]:  # the first two algorithms' line colours
        target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        near = (np.abs(rgb - target).sum(axis=2) < 40).sum()
        assert near > 150, f"{colour}: {near} pixels; figures not drawn?"


def test_the_dom_holds_the_headline_first_every_collective_plotted_and_no_nan(
        page: Path, tmp_path: Path) -> None:
    proc = open_page(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert re.findall(r'<section id="(\w+)">', dom)[0] == "headline"
    head = dom[dom.index('<section id="headline">'):]
    head = head[:head.index("</section>")]
    assert "1 of " in head and "cases failed" in head
    assert sorted(re.findall(r'data-collective="(\w+)"', head)) == sorted(COLLECTIVES)
    bandwidth = dom[dom.index('<section id="bandwidth">'):]
    bandwidth = bandwidth[:bandwidth.index("</section>")]
    plotted = re.findall(r"<h3>(\w+) · mpi · float32 · sum</h3>\s*<figure><svg", bandwidth)
    assert sorted(plotted) == sorted(COLLECTIVES)
    text = re.sub(r"<svg.*?</svg>", "", dom, flags=re.S)  # figures' own ids are not page text
    text = re.sub(r"<(script|style)>.*?</\1>", "", text, flags=re.S)
    assert not re.search(r"\bnan\b", re.sub(r"<[^>]+>", " ", text), re.I)
