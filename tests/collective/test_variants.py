"""Variants of ``native`` under named settings, as scenario data: the syntax (list and mapping
forms, read back from a run's scenario.yaml), the jobs they need, and every refusal (one line,
naming the key) of settings commbench knows to be meaningless."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.collective import variants as var
from bench.collective.case import groups
from bench.collective.scenario import CollectiveScenario, ScenarioError, check_library, parse_scenario
from bench.gate.keys import key_of
from tests.conftest import ROOT, commbench

RD = {"native": {"name": "mpich-rd", "env": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM":
                                                 "recursive_doubling"}}}
RING = {"native": {"name": "mpich-ring", "env": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}}}


def _sc(**keys: object) -> CollectiveScenario:
    return parse_scenario({"name": "v", "sizes": ["1KiB"], **keys}, "s.yaml")


def _refused(**keys: object) -> str:
    with pytest.raises(ScenarioError) as e:
        _sc(**keys)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("s.yaml:")
    return msg


def test_list_form_runs_names_then_variants_and_reads_back_the_same() -> None:
    sc = _sc(collectives=["all_reduce", "broadcast"], algorithms=["ring", "native", RD, RING])
    assert sc.algorithms_for("all_reduce") == ("ring", "native", "mpich-rd", "mpich-ring")
    assert set(sc.variants()) == {"mpich-rd", "mpich-ring"}
    dump = sc.model_dump(mode="json")
    assert dump["algorithms"][2] == RD  # written as the user wrote it
    assert parse_scenario(dump, "again") == sc


def test_broadcast_leaves_out_an_allreduce_setting_with_a_note() -> None:
    sc = _sc(collectives=["all_reduce", "broadcast"], algorithms=["native", RD])
    notes: list[str] = []
    got = {g.collective: g.algorithms for g in groups(sc, 4, 4, notes)}
    assert got == {"all_reduce": ("native", "mpich-rd"), "broadcast": ("native",)}
    assert notes == ["broadcast mpich-rd on mpi: MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM concerns "
                     "MPI_Allreduce; broadcast calls MPI_Bcast (transport mpi); left out"]
    (g,) = [g for g in groups(sc, 4, 4) if g.collective == "all_reduce"]
    assert (g.base("mpich-rd"), g.base("native")) == ("native", "native")


def test_mapping_form_and_yaml_values_as_text() -> None:
    ompi = {"native": {"name": "ompi-ring", "env": {"OMPI_MCA_coll_tuned_use_dynamic_rules": True,
                                                    "OMPI_MCA_coll_tuned_allreduce_algorithm": 4}}}
    sc = _sc(collectives=["all_reduce", "all_gather"], algorithms={"all_reduce": ["ring", ompi]})
    v = sc.variants()["ompi-ring"]
    assert v.env == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                     "OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}
    assert sc.algorithms_for("all_gather")[0] == "native"  # left to all: no variant


def test_one_job_per_distinct_environment_default_first() -> None:
    same = {"native_inplace": {"name": "rd-inplace", "env": RD["native"]["env"]}}
    sc = _sc(algorithms=["ring", "native", RD, RING, same])
    envs = var.environments(sc.variants())
    assert envs == ((), (("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "recursive_doubling"),),
                    (("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "ring"),))
    by_job = [tuple(a for g in groups(sc, 2, 2, jobs=(e,)) for a in g.algorithms) for e in envs]
    assert by_job == [("ring", "native"), ("mpich-rd", "rd-inplace"), ("mpich-ring",)]
    # a job commbench did not start runs the default and what its environment already has
    assert var.job_environments({"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"},
                                sc.variants()) == (envs[0], envs[2])
    assert var.job_environments({var.JOB_ENV: "1"}, sc.variants()) == (envs[1],)


def test_two_variants_are_two_keys_to_compare_and_the_gate() -> None:
    rec = {"kind": "collective", "collective": "all_reduce", "transport": "mpi", "world_size": 4,
           "ranks_per_node": 4, "nbytes": 1024, "dtype": "float32", "op": "sum"}
    keys = {key_of({**rec, "algorithm": a}) for a in ("native", "mpich-rd", "mpich-ring")}
    assert len(keys) == 3


@pytest.mark.parametrize(("algorithms", "says"), [
    ([{"ring": {"name": "x", "env": {"A": "1"}}}], "a variant is of native or native_inplace, "
                                                    "got 'ring'"),
    ([{"native": {"name": "ring", "env": {"NCCL_ALGO": "Ring"}}}], "is the name of a all_reduce"),
    ([{"native": {"name": "x", "env": {}}}], "env"),
    ([{"native": {"name": "x"}}], "env"),
    ([{"native": {"name": "bad name", "env": {"A": "1"}}}], "name"),
    ([RD, {"native": {"name": "mpich-rd", "env": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring"}}}],
     "an algorithm listed twice"),
    ([RD, RD], "listed twice"),
    ([{"native": {"name": "x", "env": {"NCCL_ALGO": "Ring"}}}],
     "NCCL_ALGO is NCCL's, read by nccl transports' vendor calls, not by mpi ones"),
    ([{"native": {"name": "x", "env": {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"}}}],
     "MPIR_CVAR_BCAST_INTRA_ALGORITHM concerns MPI_Bcast; all_reduce calls MPI_Allreduce"),
    ([{"native": {"name": "x", "env": {"MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM": "tsp_ring"}}}],
     "concerns MPI_Iallreduce"),
    ([{"native": {"name": "x", "env": {"OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}}}],
     "OMPI_MCA_coll_tuned_allreduce_algorithm takes effect only with "
     "OMPI_MCA_coll_tuned_use_dynamic_rules=1"),
    ([{"native": {"name": "x", "env": {"NCCL_PROTO": "LL", "MPIR_CVAR_CH4_NETMOD": "ofi"}}}],
     "settings of MPICH and NCCL in one variant"),
])
def test_meaningless_or_malformed_variants_are_refused(algorithms: list[object], says: str) -> None:
    assert says in _refused(algorithms=algorithms)


def test_one_name_with_two_meanings_across_collectives_is_refused() -> None:
    other = {"native": {"name": "mpich-rd", "env": {"MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM": "ring"}}}
    msg = _refused(collectives=["all_reduce", "all_gather"],
                   algorithms={"all_reduce": [RD], "all_gather": [other]})
    assert msg == "s.yaml: algorithms: variant 'mpich-rd' given twice with different settings"


def test_a_variant_with_emulation_is_refused() -> None:
    msg = _refused(algorithms=["ring", RD], world_sizes=[4], transports=["mpi"],
                   emulate={"profile": "emulated-slow", "topology": "2x2"})
    assert "variant 'mpich-rd' is a vendor call, which an emulated run leaves out" in msg


def test_settings_of_no_known_library_pass_unjudged() -> None:
    sc = _sc(algorithms=[{"native": {"name": "ucx-shm", "env": {"UCX_TLS": "sm,self"}}}])
    assert sc.algorithms_for("all_reduce") == ("ucx-shm",)


def test_an_mpich_setting_under_open_mpi_is_refused_before_launch() -> None:
    sc = _sc(algorithms=["native", RD])
    check_library(sc, "s.yaml", "mpich", "MPICH Version: 5.0.2")
    with pytest.raises(ScenarioError, match=r"^s\.yaml: algorithms: variant 'mpich-rd': "
                       r"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM is read by MPICH only; this run's "
                       r"MPI is Open MPI v5\.0\.11$"):
        check_library(sc, "s.yaml", "openmpi", "Open MPI v5.0.11")


def test_run_refuses_a_meaningless_setting_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "name: v\nsizes: [1KiB]\nalgorithms: [native, {native: {name: nccl-ring, "
        "env: {NCCL_ALGO: Ring}}}]\n")
    res = commbench("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run"))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].endswith(
        "algorithms: variant 'nccl-ring': NCCL_ALGO is NCCL's, read by nccl transports' vendor "
        "calls, not by mpi ones (transport mpi)")
    assert not (tmp_path / "run").exists()


def test_the_shipped_variants_scenario_loads() -> None:
    from bench.collective.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "mpich-variants.yaml")
    assert len(sc.variants()) >= 2
