"""A job's temporary directory is new, empty, and gone afterwards with all in it, however the
job ended (the runs themselves: tests/launch/test_signals.py, test_listening.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.launch import scratch


def test_the_directory_and_all_in_it_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with scratch.job_tmpdir() as tmp:
        assert tmp.parent == tmp_path and list(tmp.iterdir()) == []
        (tmp / "ompi.123" / "1").mkdir(parents=True)
        (tmp / "ompi.123" / "1" / "pmix.sock").write_bytes(b"x")
    assert list(tmp_path.iterdir()) == []


def test_it_is_removed_when_the_job_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(KeyboardInterrupt), scratch.job_tmpdir() as tmp:
        (tmp / "torchelastic_x").mkdir()
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
