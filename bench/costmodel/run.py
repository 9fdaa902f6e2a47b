"""``commbench predict``'s work: every requested case predicted, written as a run directory
(``meta.json`` + ``results.jsonl`` through :mod:`bench.store.records`), progress on stderr."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.argtypes import CommbenchError, names
from bench.costmodel.model import Cluster
from bench.costmodel.net import Net
from bench.costmodel.predict import MAX_SCHEDULE_RANKS, predict, record
from bench.costmodel.profile import Profile
from bench.store import kinds
from bench.store.meta import git_commit, host_facts, package_versions
from bench.store.records import ResultWriter, write_meta
from bench.units import format_size, parse_size, size_range
from kernels import collective as coll
from kernels.algorithm import algorithm_names
from kernels.ops import ITEMSIZE


class RequestError(CommbenchError, ValueError):
    """A request that cannot be predicted; one line."""


@dataclass(frozen=True)
class Request:
    profile: Profile
    cluster: Cluster
    worlds: tuple[int, ...]
    collectives: tuple[str, ...]
    algorithms: tuple[str, ...] | None  # None: all of each collective
    sizes: tuple[int, ...]
    dtypes: tuple[str, ...] = ("float32",)
    transport: str = "model"
    max_schedule_ranks: int = MAX_SCHEDULE_RANKS


def parse_sizes(text: str) -> list[int]:
    """``8B..1GiB`` (factor 2), ``8B..1GiB:4`` (factor 4) or a list ``8B,64KiB,1GiB``."""
    try:
        if ".." in text:
            lo, _, rest = text.partition("..")
            hi, _, factor = rest.partition(":")
            f = float(factor) if factor else 2.0
            if f <= 1:
                raise RequestError(f"--sizes {text!r}: the factor must be > 1")
            a, b = parse_size(lo.strip()), parse_size(hi.strip())
            if b < a:
                raise RequestError(f"--sizes {text!r}: the range ends before it starts")
            return size_range(a, b, f)
        return sorted({parse_size(s.strip()) for s in text.split(",") if s.strip()})
    except ValueError as e:
        if isinstance(e, RequestError):
            raise
        raise RequestError(f"--sizes {text!r}: {e}") from None


def check(req: Request) -> None:
    """Every name known and every job placeable with the profile's link classes."""
    if not req.worlds or min(req.worlds) < 1:
        raise RequestError("--world-sizes: need world sizes >= 1")
    if not req.sizes:
        raise RequestError("--sizes: no sizes")
    for d in req.dtypes:
        if d not in ITEMSIZE:
            raise RequestError(f"--dtypes: unknown dtype {d!r}; valid: {', '.join(ITEMSIZE)}")
    if req.algorithms is not None:
        known = {a for c in req.collectives for a in algorithm_names(c)}
        bad = [a for a in req.algorithms if a not in known]
        if bad:
            raise RequestError(f"--algorithms: unknown algorithm {bad[0]!r} for "
                               f"{', '.join(req.collectives)}; valid: {', '.join(sorted(known))}")
    for p in req.worlds:
        Net(req.cluster.place(p), req.profile)  # ProfileError: a link class the job needs


def run(req: Request, out: Path, say: Callable[[str], None]) -> tuple[int, list[str]]:
    """Predict and write; returns (records written, skipped-case lines)."""
    check(req)
    started = dt.datetime.now(dt.timezone.utc).isoformat()
    meta = _meta(req, out, started)
    write_meta(out, {**meta, "status": "running"})
    skipped: dict[tuple[str, str, int, str], list[int]] = {}
    n = 0
    with ResultWriter(out, durable=False) as w:  # recomputed in seconds: one sync at the end
        for p in req.worlds:
            t0, placed = time.perf_counter(), req.cluster.place(p)
            before = n
            for c in req.collectives:
                names = None if req.algorithms is None else [
                    a for a in req.algorithms if a in algorithm_names(c)]
                if names == []:
                    continue
                for dtype in req.dtypes:
                    chose: dict[str, list[int]] = {}
                    for pred in predict(req.profile, placed, c, req.sizes, dtype, names,
                                        req.max_schedule_ranks):
                        if pred.choice and pred.estimate is not None:
                            label = "/".join(pred.choice.get(k, "") for k in
                                             ("algorithm", "protocol")).strip("/")
                            chose.setdefault(f"{pred.algorithm} {label or pred.choice['from']}",
                                             []).append(pred.nbytes)
                        if pred.estimate is None:
                            key = (pred.collective, pred.algorithm, p, _generic(pred.why))
                            skipped.setdefault(key, []).append(pred.nbytes)
                            continue
                        w.write(record(pred, placed, req.profile, req.transport,
                                       {"run_id": out.name, "scenario": meta["scenario"]["name"]}))
                        n += 1
                    if chose:
                        say(f"predict: p={p} {c} vendor choice: " + ", ".join(
                            f"{k} {_sizes(v)}" for k, v in chose.items()))
            note = ", scaled out beyond the topology" if placed.scaled_out else ""
            say(f"predict: p={p} on {placed.describe()}{note}: {n - before} records "
                f"({time.perf_counter() - t0:.2f} s)")
    lines = [f"{c} {a} p={p}: {_sizes(v)} skipped: {why}" for (c, a, p, why), v in skipped.items()]
    by_why: dict[str, list[str]] = {}
    for c, a, p, why in skipped:
        by_why.setdefault(re.sub(r"^native(_inplace)?: ", "", why), []).append(f"{c} {a} p={p}")
    for why, where in by_why.items():
        say(f"predict: skipped {len(where)} (collective, algorithm, p): {why} "
            f"[{'; '.join(where[:4])}{'; ...' if len(where) > 4 else ''}]")
    write_meta(out, {**meta, "status": "ok", "skipped": lines,
                     "finished": dt.datetime.now(dt.timezone.utc).isoformat()})
    return n, lines


def _generic(why: str) -> str:
    """A skip reason without the numbers of one size, so sizes group."""
    return re.sub(r"count \d+ not a multiple of \d+", "count not a multiple of the split", why)


def _sizes(v: Sequence[int]) -> str:
    if len(v) == 1:
        return format_size(v[0])
    return f"{len(v)} sizes {format_size(min(v))}..{format_size(max(v))}"


def _meta(req: Request, out: Path, started: str) -> dict[str, Any]:
    cl = req.cluster
    return kinds.meta(
        run_id=out.name, source="commbench predict", started=started,
        scenario={"name": f"predict {req.profile.name} on {cl.spec}",
                  "description": f"predicted with profile {req.profile.name} "
                                 f"({req.profile.source}) on topology {cl.spec}"},
        predicted=True, launcher="commbench predict (the cost model; nothing was run)",
        profile={**req.profile.provenance(), "fitted": req.profile.fitted},
        topology={"spec": cl.spec, "node_sizes": list(cl.node_sizes)[:64],
                  "nodes": cl.num_nodes, "placement": cl.placement,
                  "nodes_per_leaf": cl.nodes_per_leaf, "oversubscription": cl.oversubscription,
                  "nics_per_node": cl.nics_per_node or req.profile.nics_per_node},
        jobs=[{"world_size": p, "job": cl.place(p).describe(),
               "scaled_out": cl.place(p).scaled_out} for p in req.worlds],
        collectives=list(req.collectives), sizes=[format_size(s) for s in req.sizes],
        host=host_facts(), packages=package_versions(),
        commit=git_commit(Path(__file__).resolve().parents[2]),
    )

def all_collectives(text: str | None) -> tuple[str, ...]:
    if not text or text == "all":
        return tuple(coll.names())
    return tuple(coll.resolve(c).key for c in names(text))

