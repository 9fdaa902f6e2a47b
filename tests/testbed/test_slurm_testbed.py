"""Slurm across the testbed's hosts: slurmctld on the first, one slurmd per host (each with its
own name and address), so ``sbatch -N 4`` runs a commbench job on four separate network stacks
with MPICH's bytes on the links. Skipped, with the reason, without root or Slurm."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.store.records import iter_records, read_meta
from bench.testbed.launch import MPICH_OVER_TCP
from bench.testbed.spec import Testbed
from tests.conftest import ROOT
from tests.helpers.slurm_cluster import Cluster, ensure_slurm
from tests.helpers.testbed import running_testbed
from tests.launch.test_slurm import SMALL, sbatch, scenario

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
HOSTS = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    why = ensure_slurm()
    if why:
        pytest.skip(why)
    with running_testbed(HOSTS, "ts") as tb:
        c = Cluster(tmp_path_factory.mktemp("slurm-testbed"), cpus=2, testbed=tb)
        try:
            c.start()
            yield c
        finally:
            c.stop()


def test_sbatch_across_four_hosts(cluster: Cluster, tmp_path: Path) -> None:
    tb: Testbed = cluster.testbed  # type: ignore[assignment]
    out = tmp_path / "bringup"
    rc, state, text = sbatch(cluster, tmp_path, ROOT / "scripts/slurm/bringup.sbatch",
                             "-N", str(HOSTS), "--ntasks-per-node", "1",
                             env={"SCENARIO": str(scenario(tmp_path, SMALL)), "OUT": str(out),
                                  **MPICH_OVER_TCP})
    assert rc == 0 and state == "COMPLETED", text[-3000:]
    assert f"{HOSTS} node(s), {HOSTS} rank(s)" in text and text.strip().endswith(".html")
    recs = list(iter_records(out))
    assert recs and {(r["world_size"], r["nodes"], r["status"]) for r in recs} == \
        {(HOSTS, HOSTS, "ok")}
    assert all(r["bytes_sent_inter_max"] == r["bytes_sent_max"] for r in recs
               if r["algorithm"] != "native")  # one rank per host: every byte crosses hosts
    assert read_meta(out)["hosts"] == tb.names()
    probe = list(iter_records(tmp_path / "bringup-probe"))
    assert {(r["src"], r["dst"]) for r in probe} == \
        {(a, b) for a in range(HOSTS) for b in range(HOSTS) if a < b}
