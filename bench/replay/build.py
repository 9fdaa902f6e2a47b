"""A replay scenario from what a trace format read: the matched calls (:mod:`.merge`), written
as the YAML ``commbench run`` takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.replay.calls import TraceError
from bench.replay.formats import Read
from bench.replay.merge import merge
from bench.replay.scenario import ReplayScenario


def scenario_of(read: Read, fmt: str, paths: Sequence[Path], name: str) -> ReplayScenario:
    """The step's calls as a validated scenario; a call the harness cannot replay is a
    :class:`TraceError` naming its event."""
    calls = []
    for m, gap in merge(read.by_rank, read.world, read.groups):
        c: dict[str, Any] = {"op": m.op, "group": list(m.group), "nbytes": m.nbytes,
                             "dtype": m.dtype}
        if m.root is not None:
            c["root"] = m.root
        if gap is not None:
            c["gap_us"] = gap
        calls.append((c, m.calls[0].where))
    if not calls:
        raise TraceError(str(paths[0]), "no communication calls in the trace")
    from pydantic import ValidationError

    from bench.replay.scenario import ReplayCall

    for c, where in calls:
        try:
            ReplayCall.model_validate(c)
        except ValidationError as e:
            raise TraceError(where, str(e.errors()[0]["msg"]).removeprefix("Value error, ")) from None
    shown = ", ".join(p.name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return ReplayScenario(name=name, description=f"one step of communication from {fmt} {shown}",
                          source=", ".join(str(p) for p in paths), format=fmt,
                          world_size=read.world, calls=[c for c, _ in calls])


def write(sc: ReplayScenario, out: Path) -> None:
    """``sc`` as YAML at ``out`` (a scenario file ``commbench run`` reads back as ``sc``)."""
    dump = {"kind": sc.kind, **sc.model_dump(mode="json", exclude_defaults=True,
                                             exclude={"kind", "calls"})}
    head = yaml.safe_dump(dump, sort_keys=False, width=100)
    calls = "".join(f"- {_flow(c.model_dump(mode='json', exclude_none=True))}\n"
                    for c in sc.calls)  # one call a line
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"{head}calls:\n{calls}")


def _flow(d: dict[str, Any]) -> str:
    return yaml.safe_dump(d, sort_keys=False, default_flow_style=True, width=1 << 16).strip()
