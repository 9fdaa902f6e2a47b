"""Topologies read from the launch: Slurm's allocation, a measured run's nodes, this host's NICs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.costmodel.launch import nics_here, resolve_topology, run_node_sizes, slurm_node_sizes
from bench.costmodel.model import TopologyError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tasks, sizes", [
    ("8(x3),4", (8, 8, 8, 4)), ("2", (2,)), ("4(x2)", (4, 4)), ("1,3(x2),2", (1, 3, 3, 2)),
])
def test_slurm_tasks_per_node(tasks: str, sizes: tuple[int, ...]) -> None:
    assert slurm_node_sizes({"SLURM_TASKS_PER_NODE": tasks}) == sizes


def test_slurm_fallback_and_errors() -> None:
    assert slurm_node_sizes({"SLURM_JOB_NUM_NODES": "3", "SLURM_NTASKS_PER_NODE": "8"}) == (8, 8, 8)
    with pytest.raises(TopologyError, match="not inside a Slurm allocation"):
        slurm_node_sizes({})
    with pytest.raises(TopologyError, match="cannot read SLURM_TASKS_PER_NODE"):
        slurm_node_sizes({"SLURM_TASKS_PER_NODE": "8[x3]"})
    for bad in ("0", "2(x0)"):
        with pytest.raises(TopologyError, match="expected counts >= 1"):
            slurm_node_sizes({"SLURM_TASKS_PER_NODE": bad})
    with pytest.raises(TopologyError, match="must be counts >= 1"):
        slurm_node_sizes({"SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS_PER_NODE": "abc"})


def test_resolve_slurm_with_options() -> None:
    c = resolve_topology("slurm:leaf=2:nics=4", {"SLURM_TASKS_PER_NODE": "8(x3),4"})
    assert (c.node_sizes, c.nodes_per_leaf, c.nics_per_node, c.world) == ((8, 8, 8, 4), 2, 4, 28)
    assert c.spec == "slurm:leaf=2:nics=4 = 8,8,8,4:leaf=2:nics=4"


def _records(tmp: Path, recs: list[dict[str, object]]) -> Path:
    (tmp / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs) + "not json\n")
    return tmp


def test_run_nodes_from_hosts(tmp_path: Path) -> None:
    hosts = ["a", "a", "b", "c", "c", "c"]
    recs = [{"kind": "probe", "src": s, "dst": d, "src_host": hosts[s], "dst_host": hosts[d]}
            for s in range(6) for d in range(s + 1, 6)]
    assert run_node_sizes(_records(tmp_path, recs)) == (2, 1, 3)


def test_run_nodes_from_probe_nodes(tmp_path: Path) -> None:
    """Virtual or emulated nodes of one host: the probe's node numbers, not its host names."""
    node = [0, 0, 1, 1, 2, 2]
    recs = [{"kind": "probe", "src": s, "dst": d, "src_host": "vm", "dst_host": "vm",
             "src_node": node[s], "dst_node": node[d]} for s in range(6) for d in range(s + 1, 6)]
    assert run_node_sizes(_records(tmp_path, recs)) == (2, 2, 2)


def test_run_nodes_from_largest_world(tmp_path: Path) -> None:
    recs = [{"world_size": 2, "nodes": 1, "ranks_per_node": 2},
            {"world_size": 8, "nodes": 4, "ranks_per_node": 2},
            {"world_size": 4, "nodes": 2, "ranks_per_node": 2}]
    assert run_node_sizes(_records(tmp_path, recs)) == (2, 2, 2, 2)
    assert resolve_topology(f"run:{tmp_path}:nics=1").node_sizes == (2, 2, 2, 2)


def test_run_without_nodes(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="no record names its nodes"):
        run_node_sizes(_records(tmp_path, [{"world_size": 2}]))
    with pytest.raises(TopologyError, match=r"no results\.jsonl"):
        run_node_sizes(tmp_path / "missing")


def test_nics_from_sysfs(tmp_path: Path) -> None:
    net, ib = tmp_path / "net", tmp_path / "ib"
    for name, state, physical in (("lo", "unknown", False), ("eth0", "up", True),
                                  ("eth1", "down", True), ("veth9", "up", False), ("eth2", "up", True)):
        (net / name).mkdir(parents=True)
        (net / name / "operstate").write_text(state + "\n")
        if physical:
            (net / name / "device").mkdir()
    assert nics_here(net, ib) == 2
    for hca, port, state in (("mlx5_0", "1", "4: ACTIVE"), ("mlx5_1", "1", "4: ACTIVE"),
                             ("mlx5_2", "1", "1: DOWN")):
        (ib / hca / "ports" / port).mkdir(parents=True)
        (ib / hca / "ports" / port / "state").write_text(state + "\n")
    assert nics_here(net, ib) == 2  # the HCA ports win over Ethernet
    assert nics_here(tmp_path / "none", tmp_path / "none") is None


def test_predict_topology_from_launch(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    run = _records(tmp_path / "m", [{"world_size": 4, "nodes": 2, "ranks_per_node": 2}])
    cmd = [sys.executable, "-m", "bench", "predict", "--profile", "cpu-25gbe", "--collectives",
           "all_reduce", "--algorithms", "ring", "--sizes", "1KiB,1MiB"]
    ok = subprocess.run([*cmd, "--topology", f"run:{run}", "--out", str(tmp_path / "p")],
                        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    recs = [json.loads(x) for x in (tmp_path / "p" / "results.jsonl").read_text().splitlines()]
    assert {(r["world_size"], r["nbytes"]) for r in recs} == {(4, 1024), (4, 1 << 20)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    bad = subprocess.run([*cmd, "--topology", "slurm", "--out", str(tmp_path / "q")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "not inside a Slurm allocation" in bad.stderr
