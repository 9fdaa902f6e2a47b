"""Per-rank attribution: which rank arrived last at each iteration (it waited least in the barrier)
and which finished last, each on its own clock (clocks of different hosts are never compared);
the ranks, else hosts, consistently late. The rule: docs/measuring.md, "Who was late"."""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

LATE_SHARE = 0.75  # last in at least this share of a case's iterations ...
MIN_ITERS = 10  # ... of at least this many ...
MIN_MARGIN = 0.10  # ... by at least this share of the case's median time (median margin)
AT = {"arrival": "arrived", "finish": "finished"}


def last_ranks(samples: np.ndarray, waits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration (columns of ``ranks x iterations`` arrays): the rank that arrived last
    (waited least in the barrier) and the one that finished last (longest sample)."""
    return np.argmin(waits, axis=0), np.argmax(samples, axis=0)


def _named(who: np.ndarray, margin: np.ndarray, basis_us: float, at: str,
           name: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    """A ``late`` entry for each index last in enough iterations by enough (``name(i)``: its
    rank and host)."""
    n = len(who)
    out = []
    for i, count in enumerate(np.bincount(who)):
        if count and count / n >= LATE_SHARE:
            m = float(np.median(margin[who == i]))
            if m >= MIN_MARGIN * basis_us:
                out.append({"at": at, **name(i), "share": round(count / n, 3),
                            "margin_us": round(m, 3)})
    return out


def late(last: np.ndarray, margin: np.ndarray, hosts: Sequence[str], basis_us: float,
         at: str) -> list[dict[str, Any]]:
    """The ranks (else hosts) consistently last at ``at`` ("arrival", "finish")."""
    if len(last) < MIN_ITERS or len(hosts) < 2:
        return []
    found = _named(last, margin, basis_us, at, lambda r: {"rank": r, "host": hosts[r]})
    names = sorted(set(hosts))
    if found or len(names) < 2:
        return found
    index = np.array([names.index(hosts[r]) for r in last])
    return _named(index, margin, basis_us, at, lambda h: {"rank": None, "host": names[h]})


def fields(samples: np.ndarray, waits: np.ndarray, hosts: Sequence[str]) -> dict[str, Any]:
    """The record's attribution fields from every rank's samples and barrier waits (µs,
    ``ranks x iterations``) and each rank's host."""
    arrived, finished = last_ranks(samples, waits)
    basis = float(np.median(np.max(samples, axis=0))) if samples.size else 0.0
    arrive_margin = np.median(waits, axis=0) - np.min(waits, axis=0)
    finish_margin = np.max(samples, axis=0) - np.median(samples, axis=0)
    return {"last_arrived_ranks": arrived.tolist(), "last_finished_ranks": finished.tolist(),
            "late": late(arrived, arrive_margin, hosts, basis, "arrival")
            + late(finished, finish_margin, hosts, basis, "finish")}


def gather(comm: Any, samples: Sequence[float], waits: Sequence[float]) -> dict[str, Any] | None:
    """:func:`fields` on rank 0 of ``comm`` (an mpi4py communicator; None elsewhere).
    Collective. (This module imports no MPI: reports read it.)"""
    got = comm.gather((socket.gethostname(), np.asarray(samples, dtype=np.float64),
                       np.asarray(waits, dtype=np.float64)), root=0)
    if got is None:
        return None
    hosts = [h for h, _, _ in got]
    return fields(np.stack([s for _, s, _ in got]), np.stack([w for _, _, w in got]), hosts)


def describe(entry: Mapping[str, Any], iters: int) -> str:
    """One ``late`` entry in words: "rank 5 on tu-3 arrived last in 92 % of 200 iterations
    (by 120 µs, median)"."""
    who = (f"rank {entry['rank']} on {entry['host']}" if entry.get("rank") is not None
           else f"host {entry['host']}")
    return (f"{who} {AT.get(entry['at'], entry['at'])} last in {100 * entry['share']:.0f} % of "
            f"{iters} iterations (by {entry['margin_us']:.4g} µs, median)")


def notes(rec: Mapping[str, Any]) -> list[str]:
    """The table's notes for a record: each consistently late rank or host, and the case."""
    case = (f"{rec.get('collective')} {rec.get('nbytes')} B {rec.get('algorithm')} "
            f"p={rec.get('world_size')}")
    return [f"{describe(e, int(rec.get('iters') or 0))}: {case}" for e in rec.get("late") or []]
