"""The step's communication from a replay's records (measured or predicted): each rank's time sums
``replay_step_us`` over its groups' records; the step's is the critical rank's, per group and
per collective (docs/replay.md, "What commbench run measures")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.replay.scenario import group_label

SUMMARY = "replay.json"


def summarize(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (transport, algorithm): ``step_us``, ``critical_rank``, ``by_group``,
    ``by_collective`` (µs), and ``complete`` (no call wrong or missing its time)."""
    runs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("replay_group") is not None:
            runs.setdefault((str(r["transport"]), str(r["algorithm"])), []).append(r)
    out = []
    for (transport, algorithm), recs in sorted(runs.items()):
        per_rank: dict[int, float] = {}
        for r in recs:
            for m in r["replay_group"]:
                per_rank[m] = per_rank.get(m, 0.0) + float(r.get("replay_step_us") or 0.0)
        critical = max(sorted(per_rank), key=lambda m: per_rank[m])
        by_group: dict[str, float] = {}
        by_coll: dict[str, float] = {}
        for r in recs:
            if critical in r["replay_group"]:
                t = float(r.get("replay_step_us") or 0.0)
                g = group_label(r["replay_group"])
                by_group[g] = by_group.get(g, 0.0) + t
                by_coll[r["collective"]] = by_coll.get(r["collective"], 0.0) + t
        out.append({"transport": transport, "algorithm": algorithm, "step_us": per_rank[critical],
                    "critical_rank": critical, "by_group": by_group, "by_collective": by_coll,
                    "calls": sum(int(r["replay_calls"]) for r in recs
                                 if critical in r["replay_group"]),
                    "complete": all(r.get("status") == "ok" and r.get("replay_step_us") is not None
                                    for r in recs),
                    "predicted": any(bool(r.get("predicted")) for r in recs)})
    return out


def write_summary(run_dir: Path, records: Iterable[Mapping[str, Any]],
                  name: str = SUMMARY) -> list[str]:
    """``replay.json`` (or ``name``) in ``run_dir``; returns its lines for the terminal."""
    got = summarize(records)
    (run_dir / name).write_text(json.dumps(got, indent=1) + "\n")
    lines = []
    for s in got:
        how = "predicted" if s["predicted"] else "measured"
        lines.append(f"# replay step communication ({how}, {s['transport']} {s['algorithm']}): "
                     f"{s['step_us']:.1f} us on rank {s['critical_rank']} in {s['calls']} calls"
                     + ("" if s["complete"] else " (INCOMPLETE: a call wrong or not timed)"))
        lines.append("#   by group: " + ", ".join(f"{g} {t:.1f} us" for g, t in s["by_group"].items()))
        lines.append("#   by collective: " + ", ".join(f"{c} {t:.1f} us"
                                                     for c, t in s["by_collective"].items()))
    return lines
