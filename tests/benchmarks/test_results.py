"""benchmarks.results: a benchmark's clean run replaces its results file with what it printed,
under its command and date; a failed run, or a rank other than 0, leaves the file alone."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from benchmarks import results


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", ["x", "--rounds", "3"])
    for var in results.RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _main(status: int) -> object:
    def main() -> int:
        print("size 1KiB: 12.5")
        return status
    return main


def test_a_clean_run_writes_its_command_date_and_output(store: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    assert results.run("/somewhere/vs_native.py", _main(0)) == 0
    text = (store / "vs_native.md").read_text()
    assert capsys.readouterr().out == "size 1KiB: 12.5\n"  # still printed
    assert text.startswith("# benchmarks.vs_native\n")
    assert re.search(r"`python -m benchmarks\.vs_native --rounds 3`, \d{4}-\d\d-\d\d, on ", text)
    assert "```text\nsize 1KiB: 12.5\n```" in text


def test_a_failed_run_or_another_rank_leaves_the_file(store: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (store / "vs_native.md").write_text("before")
    assert results.run("vs_native.py", _main(2)) == 2
    monkeypatch.setenv("PMI_RANK", "1")
    assert results.run("vs_native.py", _main(0)) == 0
    assert (store / "vs_native.md").read_text() == "before"
