"""Slurm across the testbed's hosts: slurmctld on the first, one slurmd per host (each with its
own name and address), so ``sbatch -N 4`` runs a commbench job on four separate network stacks
with MPICH's bytes on the links. Skipped, with the reason, without root or Slurm."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.store.records import iter_records, read_meta
from bench.testbed.launch import MPICH_OVER_TCP
from bench.testbed.spec import Testbed
from tests.conftest import ROOT
from tests.helpers.slurm_cluster import Cluster, ensure_slurm
from tests.helpers.testbed import running_testbed
from tests.launch.test_slurm import sbatch

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


def test_sbatch_bringup_across_four_hosts(cluster: Cluster, tmp_path: Path) -> None:
    """``sbatch -N 4 scripts/slurm/bringup.sbatch`` on the testbed: every stage across four
    network stacks, the verdict, and the page's path last."""
    tb: Testbed = cluster.testbed  # type: ignore[assignment]
    out = tmp_path / "bringup"
    rc, state, text = sbatch(cluster, tmp_path, ROOT / "scripts/slurm/bringup.sbatch",
                             "-N", str(HOSTS), "--ntasks-per-node", "1",
                             env={"OUT": str(out), "BRINGUP_ARGS": "--sizes 64KiB",
                                  **MPICH_OVER_TCP})
    assert state in ("COMPLETED", "FAILED") and rc in (0, 1), text[-3000:]
    assert f"{HOSTS} node(s), {HOSTS} rank(s)" in text and text.strip().endswith("report.html")
    recs = list(iter_records(out))
    groups = {(r["stage"], tuple(r["group_hosts"])) for r in recs
              if not r["stage"].endswith("-confirm")}  # suspects re-measured: noise's, not ours
    names = tb.names()
    assert groups == {("host", (h,)) for h in names} | \
        {("pairs", (a, b)) for i, a in enumerate(names) for b in names[i + 1:]} | \
        {("all", tuple(names)), ("scale", tuple(names[:2]))}
    assert all(r["status"] == "ok" and r["wrong"] == 0 for r in recs)
    assert all(r["bytes_sent_inter_max"] == r["bytes_sent_max"] for r in recs
               if r["algorithm"] != "native" and r["stage"] != "host")  # one rank per host
    assert read_meta(out)["hosts"] == names
    verdict = json.loads((out / "verdict.json").read_text())
    assert rc == (0 if verdict["ok"] else 1)  # unpaced hosts: the verdict is noise's, not asserted
