"""``commbench list models`` and ``list profiles``: every catalog model and shipped profile, one
line each (a profile's source on the line after), each naming what it sets."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.costmodel.profile import presets
from bench.models import CATALOG


def test_list_models_names_every_model_and_its_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("models (bench/models/catalog.py")
    assert [ln.split()[0] for ln in lines[1:]] == CATALOG.names()
    gpt = next(ln for ln in lines if ln.split()[0] == "gpt-6.7b").split()
    assert gpt[1:] == ["gpt", "layers=32", "heads=32", "embd=4096", "vocab=50304", "seq_len=2048"]


def test_list_profiles_names_every_profile_what_it_sets_and_its_source(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("profiles (bench/costmodel/profiles;")
    named, sources = lines[1::2], lines[2::2]
    assert [ln.split()[0] for ln in named] == presets()
    assert all(" sets links (" in ln for ln in named)
    assert all(ln.split()[0] == "source:" for ln in sources)
    assert len(lines) == 1 + 2 * len(presets())


def test_advise_help_points_to_a_command_that_exists(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--help"]) == 0
    assert "`commbench list models`" in " ".join(capsys.readouterr().out.split())
