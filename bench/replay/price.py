"""``commbench predict --replay SCENARIO``: a replay priced by the cost model at the traced world
size or a multiple of it (:mod:`.scale`), each call on its own group's ranks as the topology
places them; records are written like a measured replay's (``predicted``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.costmodel.model import Cluster, Placed
from bench.costmodel.predict import MAX_SCHEDULE_RANKS, predict, record
from bench.costmodel.profile import Profile
from bench.replay.runner import annotate
from bench.replay.scale import rescale
from bench.replay.scenario import ReplayScenario, group_label
from bench.replay.step import write_summary
from bench.store import kinds
from bench.store.records import ResultWriter, write_meta


def sub_placed(placed: Placed, members: Sequence[int]) -> Placed:
    """The job of ``members`` (ranks of ``placed``) on the same nodes and leaves."""
    nodes = [placed.node_of[m] for m in members]
    used = list(dict.fromkeys(nodes))
    leaf = [placed.leaf_of[n] for n in used]
    leaves = list(dict.fromkeys(leaf))
    return Placed(tuple(used.index(n) for n in nodes), tuple(leaves.index(x) for x in leaf),
                  tuple(placed.leaf_nodes[x] for x in leaves), placed.oversubscription,
                  placed.nics_per_node, placed.scaled_out, placed.cluster)


def price(sc: ReplayScenario, profile: Profile, cluster: Cluster, worlds: Sequence[int],
          out: Path, say: Callable[[str], None], transport: str = "model",
          max_schedule_ranks: int = MAX_SCHEDULE_RANKS) -> int:
    """Predict every call of ``sc`` at each world size; write ``out``; returns records written."""
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    meta = kinds.meta(run_id=out.name, source="commbench predict", started=now,
                      scenario={"name": f"predict {sc.name}", "kind": "replay",
                                "description": f"replay {sc.name} priced with profile "
                                               f"{profile.name} on {cluster.spec}"},
                      predicted=True, launcher="commbench predict (the cost model; nothing "
                                               "was run)", profile=profile.provenance(),
                      topology={"spec": cluster.spec}, replay_of=sc.source,
                      world_sizes=list(worlds))
    write_meta(out, {**meta, "status": "running"})
    records: list[dict[str, Any]] = []
    skipped: list[str] = []
    cache: dict[tuple[Any, ...], Any] = {}
    with ResultWriter(out, durable=False) as w:
        for world in worlds:
            placed = cluster.place(world)
            for s in rescale(sc, world):
                sub = sub_placed(placed, s.case.group)
                key = (sub.node_of, sub.leaf_of, s.case.collective, s.case.count, s.case.dtype)
                if key not in cache:
                    cache[key] = list(predict(profile, sub, s.case.collective, [s.case.nbytes],
                                              s.case.dtype, sc.algorithms, max_schedule_ranks))
                for pred in cache[key]:
                    if pred.estimate is None:
                        skipped.append(f"p={world} group {group_label(s.case.group)} "
                                       f"{pred.collective} {pred.algorithm}: {pred.why}")
                        continue
                    rec = record(pred, sub, profile, transport, {"run_id": out.name,
                                                                 "scenario": sc.name})
                    rec["replay_world_size"] = world
                    records.append(annotate(rec, s.case, s.calls, list(s.ops), sc.source))
                    w.write(records[-1])
    for line in skipped[:5]:
        say(f"predict: skipped {line}")
    write_meta(out, {**meta, "status": "ok", "skipped": skipped, "finished":
                     dt.datetime.now(dt.timezone.utc).isoformat()})
    for world in worlds:
        for line in write_summary(out, [r for r in records if r["replay_world_size"] == world],
                                  f"replay-p{world}.json"):
            say(line.replace("# replay step", f"# p={world}: replay step", 1))
    return len(records)


def replay_request(args: Any, profile: Profile, cluster: Cluster, worlds: Sequence[int],
                   out: Path, limit: int) -> int:
    """``commbench predict --replay``: load, price, print the run directory."""
    import sys

    from bench.replay.scale import ScaleError
    from bench.scenario_base import load_scenario

    sc = load_scenario(args.replay)
    if not isinstance(sc, ReplayScenario):
        raise ScaleError(f"--replay {args.replay}: a kind: replay scenario, got kind {sc.kind}")
    for w in worlds:
        rescale(sc, w)  # every world size fits before anything is written
    n = price(sc, profile, cluster, worlds, out, lambda line: print(line, file=sys.stderr),
              args.transport, limit)
    print(f"# {n} predicted records", file=sys.stderr)
    print(out)
    return 0
