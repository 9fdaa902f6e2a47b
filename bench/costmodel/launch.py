"""Topologies read from the launch instead of typed (``slurm``, ``run:DIR``, ``here``;
docs/predict.md, "Topology and profiles"); without ``nics=`` they take the NIC count
:func:`nics_here` sees; :func:`network_facts` is what ``commbench env`` prints."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.costmodel.model import Cluster, TopologyError, parse_topology

SYS_NET = Path("/sys/class/net")
SYS_IB = Path("/sys/class/infiniband")
_TASKS = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def slurm_node_sizes(env: Mapping[str, str]) -> tuple[int, ...]:
    """Tasks per node of the Slurm job ``env`` describes; TopologyError when it describes none."""
    tasks = env.get("SLURM_TASKS_PER_NODE") or env.get("SLURM_STEP_TASKS_PER_NODE")
    if tasks:
        sizes: list[int] = []
        for part in tasks.split(","):
            m = _TASKS.match(part.strip())
            if not m or int(m.group(1)) < 1 or int(m.group(2) or 1) < 1:
                raise TopologyError(f"topology 'slurm': cannot read SLURM_TASKS_PER_NODE={tasks!r} "
                                    "(expected counts >= 1 like 8(x3),4)")
            sizes += [int(m.group(1))] * int(m.group(2) or 1)
        return tuple(sizes)
    nodes, per = env.get("SLURM_JOB_NUM_NODES"), env.get("SLURM_NTASKS_PER_NODE")
    if nodes and per:
        if not (nodes.isdigit() and per.isdigit() and int(nodes) > 0 and int(per) > 0):
            raise TopologyError(f"topology 'slurm': SLURM_JOB_NUM_NODES={nodes!r} and "
                                f"SLURM_NTASKS_PER_NODE={per!r} must be counts >= 1")
        return (int(per),) * int(nodes)
    raise TopologyError("topology 'slurm': not inside a Slurm allocation (no SLURM_TASKS_PER_NODE, "
                        "nor SLURM_JOB_NUM_NODES with SLURM_NTASKS_PER_NODE)")


def run_node_sizes(run_dir: Path) -> tuple[int, ...]:
    """Ranks per node of a measured run: from the probe's per-rank nodes (virtual and emulated
    included), else its per-rank hosts, else the records' ``nodes`` and ``ranks_per_node`` at
    its largest world size."""
    path = run_dir / "results.jsonl"
    if not path.is_file():
        raise TopologyError(f"topology 'run:{run_dir}': no results.jsonl there")
    hosts: dict[int, str] = {}
    nodes: dict[int, int] = {}
    best: tuple[int, int, int] | None = None  # (world, nodes, ranks_per_node)
    with path.open() as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            for side in ("src", "dst"):
                if not isinstance(rec.get(side), int):
                    continue
                if isinstance(rec.get(f"{side}_node"), int):
                    nodes[rec[side]] = rec[f"{side}_node"]
                if isinstance(rec.get(f"{side}_host"), str):
                    hosts[rec[side]] = rec[f"{side}_host"]
            w, n, rpn = rec.get("world_size"), rec.get("nodes"), rec.get("ranks_per_node")
            if all(isinstance(x, int) and x > 0 for x in (w, n, rpn)) and (best is None or w > best[0]):
                best = (w, n, rpn)
    for per_rank in (nodes, hosts):
        if per_rank and sorted(per_rank) == list(range(len(per_rank))):
            order = list(dict.fromkeys(per_rank[r] for r in range(len(per_rank))))
            return tuple(sum(1 for v in per_rank.values() if v == name) for name in order)
    if best is not None:
        w, n, rpn = best
        sizes = [rpn] * (w // rpn) + ([w % rpn] if w % rpn else [])
        return tuple(sizes[:n]) if len(sizes) >= n else tuple(sizes)
    raise TopologyError(f"topology 'run:{run_dir}': no record names its nodes (nodes and "
                        "ranks_per_node, or per-rank hosts)")


def nics_here(sys_net: Path = SYS_NET, sys_ib: Path = SYS_IB) -> int | None:
    """NICs of this host that carry inter-node traffic: active InfiniBand HCA ports, else up
    non-loopback, non-virtual Ethernet interfaces; None when it sees none."""
    ib = [p for p in sys_ib.glob("*/ports/*") if _read(p / "state").endswith("ACTIVE")]
    if ib:
        return len(ib)
    eth = [p for p in sys_net.iterdir() if _physical(p) and _read(p / "operstate") == "up"] \
        if sys_net.is_dir() else []
    return len(eth) or None


def _physical(iface: Path) -> bool:
    return iface.name != "lo" and (iface / "device").exists()


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def network_facts(sys_net: Path = SYS_NET, sys_ib: Path = SYS_IB) -> dict[str, Any]:
    """Interfaces and HCA ports with their link rates, as ``commbench env`` shows them."""
    out: dict[str, Any] = {}
    if sys_net.is_dir():
        for p in sorted(sys_net.iterdir()):
            if p.name == "lo":
                continue
            speed = _read(p / "speed")
            kind = "physical" if _physical(p) else "virtual"
            out[p.name] = (f"{_read(p / 'operstate') or '?'}, {kind}"
                           + (f", {speed} Mb/s" if speed and not speed.startswith("-") else ""))
    for port in sorted(sys_ib.glob("*/ports/*")):
        out[f"{port.parts[-3]} port {port.name}"] = (f"{_read(port / 'state')}, "
                                                      f"{_read(port / 'rate') or '? rate'}")
    out["nics_for_topology"] = nics_here(sys_net, sys_ib) or "none seen"
    return out


def resolve_topology(spec: str, env: Mapping[str, str] | None = None) -> Cluster:
    """A :class:`Cluster` from a spec or from the launch (module docstring)."""
    head, _, opts = spec.strip().partition(":")
    env = os.environ if env is None else env
    if head == "run":
        path, _, opts = opts.partition(":")  # a DIR holding ':' is not supported
        sizes = run_node_sizes(Path(path))
    elif head == "slurm":
        sizes = slurm_node_sizes(env)
    elif head == "here":
        sizes = (os.cpu_count() or 1,)
    else:
        return parse_topology(spec)
    options = [o for o in opts.split(":") if o] if opts else []
    if not any(o.startswith("nics=") for o in options):
        n = nics_here()
        if n:
            options.append(f"nics={n}")
    text = ",".join(str(s) for s in sizes) + "".join(f":{o}" for o in options)
    return dataclasses.replace(parse_topology(text), spec=f"{spec} = {text}")
