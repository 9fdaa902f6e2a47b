"""Whether a replay makes the communication a training record counted: per rank, the bytes by
operation (``comm_by_type_by_rank``) and rank 0's calls by operation (``comm_calls_by_type``),
exactly (:mod:`bench.training.comm` counts one step; the replay is that step's trace)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.replay.scenario import ReplayScenario


def differences(sc: ReplayScenario, rec: Mapping[str, Any]) -> list[str]:
    """One line per disagreement; empty when the replay's calls and bytes equal the record's."""
    got = sc.counted()
    out = []
    want_bytes = rec.get("comm_by_type_by_rank") or []
    if len(want_bytes) != sc.world_size:
        return [f"the record counts {len(want_bytes)} ranks, the replay has {sc.world_size}"]
    for r, (mine, theirs) in enumerate(zip(got, want_bytes)):
        if mine["bytes"] != dict(theirs):
            out.append(f"rank {r}: replay bytes {mine['bytes']} != counted {dict(theirs)}")
    calls = dict(rec.get("comm_calls_by_type") or {})
    if got[0]["calls"] != calls:
        out.append(f"rank 0: replay calls {got[0]['calls']} != counted {calls}")
    return out
