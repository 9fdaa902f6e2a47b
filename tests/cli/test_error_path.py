"""The one error path: bad input is a :class:`bench.argtypes.CommbenchError` raised where it is
detected, said by ``bench/cli.py`` in one line with exit 2; a bug inside an offline command's
computation is no such error and stays a traceback (nothing wraps the computation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main
from tests.conftest import ROOT, clean_env

BUG = """
import sys
import bench.costmodel.run as run
def broken(*args, **kwargs):
    raise ValueError("a deliberate bug")  # the class the old wrapper turned into 'bad input'
run.run = broken
from bench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_bug_in_an_offline_command_is_a_traceback(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-c", BUG, "predict", "--profile", "cpu-25gbe",
                          "--topology", "2x2", "--out", str(tmp_path / "p")],
                         capture_output=True, text=True, timeout=120, env=clean_env(), cwd=ROOT)
    assert res.returncode == 1
    assert res.stderr.startswith("Traceback (most recent call last):")
    assert res.stderr.rstrip().endswith("ValueError: a deliberate bug")


def test_a_bug_is_raised_through_main(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import bench.costmodel.run as run

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a deliberate bug")

    monkeypatch.setattr(run, "run", broken)
    with pytest.raises(ValueError, match="a deliberate bug"):
        main(["predict", "--profile", "cpu-25gbe", "--topology", "2x2", "--out", str(tmp_path / "p")])


@pytest.mark.parametrize(("argv", "line"), [
    (["--profile", "nope"], "commbench: predict: unknown profile 'nope': "),
    (["--profile", "cpu-25gbe", "--sizes", "8,zz"], "commbench: predict: --sizes '8,zz': not a size"),
])
def test_bad_input_is_still_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], line: str) -> None:
    assert main(["predict", *argv, "--topology", "2x2", "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(line), err
