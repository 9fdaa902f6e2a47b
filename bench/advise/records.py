"""Advice as a run directory: one ``advice`` record per layout and ``meta.json``, read by
``commbench report`` ("Which strategy") like any run."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.advise.band import Band
from bench.advise.evaluate import Result
from bench.advise.search import Ranked
from bench.store import kinds
from bench.store.meta import git_commit, host_facts, package_versions
from bench.store.records import ResultWriter, write_meta

MS = 1e3
ROOT = Path(__file__).resolve().parents[2]
# a record's layout fields, as :class:`bench.advise.layout.Layout` names them, and its memory terms
LAYOUT_FIELDS = ("data", "tensor", "pipeline", "zero", "microbatches", "schedule",
                 "stages_per_rank", "hook", "checkpoint", "selective", "amp", "servers", "expert")
MEMORY_TERMS = ("params", "grads", "optim", "transient", "activations", "total")


def record(r: Result, place: int, ranked: Ranked, model: str, context: dict[str, Any],
           band: Band | None = None, tied: bool = False, compared: str | None = None
           ) -> dict[str, Any]:
    """One layout's record; ``band``: the model's error band (its step's low and high),
    ``tied``: within the band of the best, ``compared``: the ``--compare`` spec it answers
    (place 0: not a place in the ranking)."""
    lay, st, mem = r.layout, r.step, r.memory.per_rank
    best = ranked.results[0]
    banded = {} if band is None else {
        "step_band": band.step, "rank_band": band.rank,
        "step_time_ms_low": st.time * (1 - band.step) * MS,
        "step_time_ms_high": st.time * (1 + band.step) * MS, "tied_with_best": tied,
        "vs_best": st.time / best.step.time - 1 if best.fits else None}
    return kinds.advice(
        predicted=True,
        model=model, world_size=ranked.world, place=place,
        layout=lay.label, **{k: getattr(lay, k) for k in LAYOUT_FIELDS},
        fits=r.fits, memory_limit_bytes=r.limit,
        **{f"mem_{k}_bytes": getattr(mem, k) for k in MEMORY_TERMS},
        memory_stage=r.memory.stage,  # the pipeline index of the rank that decides the fit
        compute_ms=st.compute * MS, bubble_ms=st.bubble * MS,
        comm_ms_by_type={k: v * MS for k, v in st.comm.items()},
        exposed_ms_by_type={k: v * MS for k, v in st.exposed.items()},
        algorithms=st.algorithms,
        best_schedules=st.best, gradient_allreduce=st.best.get("all_reduce:data"),
        step_time_ms=st.time * MS, step_time_ms_no_overlap=st.no_overlap * MS,
        step_time_ms_full_overlap=st.full_overlap * MS,
        samples_per_s=r.samples_per_s, scaling_efficiency=r.efficiency,
        margin_over_runner_up=ranked.margin if place == 1 and best.fits else None,
        **banded, **({"compared": compared} if compared is not None else {}),
        time_unix=time.time(), **context,
    )


def write_run(out: Path, records: Iterable[dict[str, Any]], meta: dict[str, Any]) -> int:
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    base = kinds.meta(run_id=out.name, source="commbench advise", started=started,
                      scenario={"name": "advise", "kind": "advice"}, status="running",
                      kind="advice", host=host_facts(), versions=package_versions(),
                      commit=git_commit(ROOT), **meta)
    write_meta(out, base)
    recs = list(records)
    with ResultWriter(out, durable=False) as w:
        for rec in recs:
            w.write(rec)
    write_meta(out, {**base, "status": "ok", "records": len(recs)})
    return len(recs)
