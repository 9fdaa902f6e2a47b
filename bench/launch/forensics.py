"""What a hung case's ranks were doing, from two readings of their slots some polls apart
(:mod:`bench.launch.rankstate`; the wording: docs/failures.md#which-rank-where). :func:`explain`
is pure: the tests hold it on recorded slots."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.launch.inflight import read_json

HANG = "hang.json"  # RUN/hang.json: the first rank to explain a hang writes it
Slot = Mapping[str, Any]


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str | None
    state: str  # "not responding", "no slot", "elsewhere", "waits"
    step: int | None = None  # 1-based step of the schedule
    steps: int | None = None
    peer: int | None = None  # the world rank waited for (receives first, then sends)
    peer_host: str | None = None
    op: str | None = None  # "recv" or "send"
    case: str | None = None  # the case a rank elsewhere is in
    algorithm: str | None = None
    vendor: bool = False  # the algorithm is the vendor's call (no steps of commbench's)


@dataclass(frozen=True)
class Hang:
    case: str
    missing: tuple[Rank, ...]  # ranks that never arrived, or stopped responding
    waiting: tuple[Rank, ...]  # live ranks of the case and what each waits for
    why: str  # "exceeded case_timeout_s=…: rank 6 on tu-3 never arrived: …"

    @property
    def line(self) -> str:
        return f"case '{self.case}' {self.why}"

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "why": self.why,
                "missing": [asdict(r) for r in self.missing],
                "waiting": [asdict(r) for r in self.waiting]}


def _who(rank: int | None, host: str | None) -> str:
    return f"rank {rank} on {host}" if host else f"rank {rank}"


def _step(r: Rank) -> str:
    if r.step is None:
        if r.algorithm and r.vendor:
            return f"in a vendor call ({r.algorithm})"
        if r.algorithm:
            return f"between iterations of {r.algorithm} (the iteration's barrier)"
        return "outside any algorithm (the harness's own synchronisation)"
    verb = "for" if r.op == "recv" else "sending to"
    return f"in step {r.step} of {r.steps} {verb} {_who(r.peer, r.peer_host)}"


def _rank(r: int, slot: Slot | None, live: bool, case: str, hosts: Mapping[int, str]) -> Rank:
    if slot is None:
        return Rank(r, None, "no slot")
    host = slot.get("host")
    peers = [("recv", p) for p in slot.get("recv_from", [])] + \
            [("send", p) for p in slot.get("send_to", [])]
    op, peer = peers[0] if peers else (None, None)
    step = slot.get("step")
    at = dict(step=step + 1 if step is not None else None, steps=slot.get("steps"), peer=peer,
              peer_host=hosts.get(peer) if peer is not None else None, op=op,
              algorithm=slot.get("algorithm"), vendor=bool(slot.get("vendor")))
    if not live:
        return Rank(r, host, "not responding", **at)
    if slot.get("case") != case:
        return Rank(r, host, "elsewhere", case=slot.get("case") or None)
    return Rank(r, host, "waits", **at)


def explain(case: str, head: str, before: Mapping[int, Slot], after: Mapping[int, Slot],
            world_size: int) -> Hang:
    """The hang of ``case`` from two readings of the slots, ``before`` and ``after`` some polls;
    ``head`` says what ended it ("exceeded case_timeout_s=10")."""
    hosts = {r: s["host"] for r, s in after.items() if s.get("host")}
    ranks = []
    for r in range(world_size):
        slot = after.get(r)
        live = slot is not None and r in before and slot.get("beat") != before[r].get("beat")
        ranks.append(_rank(r, slot, live, case, hosts))
    missing = tuple(r for r in ranks if r.state != "waits")
    waiting = tuple(r for r in ranks if r.state == "waits")
    return Hang(case, missing, waiting, f"{head}: {_parts(missing, waiting)}")


def _parts(missing: tuple[Rank, ...], waiting: tuple[Rank, ...]) -> str:
    parts = []
    for r in missing:
        if r.state == "not responding":
            last = f"; last {_step(r)}" if r.step is not None else ""
            parts.append(f"{_who(r.rank, r.host)} never arrived: not responding "
                         f"(killed or stopped{last})")
        elif r.state == "no slot":
            parts.append(f"rank {r.rank} never arrived: no state (never started, or its host "
                         "does not see the run directory)")
        else:
            parts.append(f"{_who(r.rank, r.host)} never arrived: still in '{r.case}'")
    parts += [f"{_who(r.rank, r.host)} waits {_step(r)}" for r in waiting if r.step is not None]
    rest: dict[str, list[Rank]] = {}
    for r in waiting:
        if r.step is None:
            rest.setdefault(_step(r), []).append(r)
    for where, rs in rest.items():
        hosts = sorted({r.host for r in rs if r.host})
        many = len(rs) > 1
        parts.append(f"rank{'s' if many else ''} {', '.join(str(r.rank) for r in rs)}"
                     + (f" on {', '.join(hosts)}" if hosts else "")
                     + f" wait{'' if many else 's'} {where}")
    if not missing:
        parts.insert(0, "every rank is alive and in the case")
    return "; ".join(parts)


def claim(run_dir: Path, hang: Hang, rank: int) -> bool:
    """Write ``RUN/hang.json`` unless a rank already did (written whole, then linked: a reader
    never sees half of it); True when this call wrote it."""
    tmp = run_dir / f"{HANG}.{rank}.tmp"
    tmp.write_text(json.dumps(hang.as_dict()) + "\n")
    try:
        os.link(tmp, run_dir / HANG)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def take(run_dir: Path) -> dict[str, Any] | None:
    """The hang a job left (removed, like the in-flight marker), or None."""
    data = read_json(run_dir / HANG)
    (run_dir / HANG).unlink(missing_ok=True)
    return data
