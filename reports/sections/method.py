"""Method: how the numbers were measured, and on what (from ``meta.json``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bench.collective import canary
from bench.units import format_size
from kernels import collective as coll
from reports.data import ReportData, Run
from reports.sections import Options, Section, holds_any, section

# Records timed by the harness this section describes (barrier, max over ranks, exact check);
# a probe's records say how they were measured in their own section.
HARNESS_KINDS = ("collective", "training")


def _range(s: pd.Series) -> str:
    s = pd.to_numeric(s, errors="coerce").dropna()
    if s.empty:
        return "n/a"
    lo, hi = int(s.min()), int(s.max())
    return str(lo) if lo == hi else f"{lo} – {hi}"


def _scenario(run: Run) -> tuple[str, str]:
    sc = run.meta.get("scenario")
    if isinstance(sc, dict):
        return str(sc.get("name", "")), str(sc.get("description", ""))
    return (str(sc) if sc else ""), ""


def _emulated(run: Run) -> str | None:
    """What an emulated run (scenario key ``emulate``, bench/emulate) emulated, or None."""
    emu = run.scenario.get("emulate")
    if not isinstance(emu, dict):
        return None
    return (f"yes: topology {emu.get('topology')} on this host, messages between emulated nodes "
            f"delayed as profile {emu.get('profile')} prices them; vendor calls left out")


def _isolation(iso: Any) -> str | None:
    """meta.json's ``isolation`` as one line (bench/launch/isolate.py), or None (older runs)."""
    if not isinstance(iso, dict):
        return None
    return f"{'on' if iso.get('isolated') else 'off'} ({iso.get('why')})"


def environment(run: Run) -> list[tuple[str, str]]:
    m = run.meta
    host = m.get("host") if isinstance(m.get("host"), dict) else {}
    mpi = m.get("mpi") if isinstance(m.get("mpi"), dict) else {}
    name, desc = _scenario(run)
    mem = host.get("memory_bytes")
    items = [
        ("source", m.get("source", "commbench")), ("scenario", name), ("description", desc),
        ("emulated", _emulated(run)),
        ("status", m.get("status")), ("started", m.get("started")), ("finished", m.get("finished")),
        ("launcher", m.get("launcher")), ("isolation", _isolation(m.get("isolation"))),
        ("commit", m.get("commit")),
        ("host", host.get("hostname")), ("cpu", host.get("cpu")),
        ("cores (logical/physical)", f"{host.get('cores_logical')}/{host.get('cores_physical')}"
         if host else None),
        ("memory", format_size(int(mem)) if isinstance(mem, int) and mem > 0 else None),
        ("GPUs", ", ".join(map(str, host.get("gpus") or [])) or "none"),
        ("OS", host.get("os")), ("Python", host.get("python")),
        ("MPI", mpi.get("library")),
        ("packages", ", ".join(f"{k} {v}" for k, v in sorted((m.get("packages") or {}).items()))),
    ]
    return [(k, str(v)) for k, v in items if v not in (None, "")]


def measurement(run: Run) -> dict[str, Any]:
    df = run.records
    timers = sorted({str(t) for t in df["timer"].dropna().unique()}) if "timer" in df else []
    predicted = (df["predicted"].map(lambda v: v is True) if "predicted" in df
                 else pd.Series(False, index=df.index))
    summaries = int((df["samples_are_summaries"].map(lambda v: v is True) & ~predicted).sum()) \
        if "samples_are_summaries" in df else 0
    profiles = sorted({str(p) for p in df.loc[predicted, "profile"].dropna()}) \
        if "profile" in df else []
    meta_profile = run.meta.get("profile")  # advise keeps its profile in the run's meta
    if predicted.any() and not profiles and isinstance(meta_profile, dict) and meta_profile.get("name"):
        profiles = [str(meta_profile["name"])]
    probe = int((df["kind"] == "probe").sum())
    return {"timers": timers, "iters": _range(df["iters"]), "warmup": _range(df["warmup"]),
            "probe": probe, "cases": len(df) - probe,
            "repetitions": _range(df["repetitions"]),
            "oversubscribed": int(df["oversubscribed"].sum()), "records": len(df),
            "summaries": summaries, "predicted": int(predicted.sum()), "profiles": profiles}


def collectives(data: ReportData) -> list[dict[str, str]]:
    """The definitions (size, busbw factor, rounding) of the collectives in these runs."""
    present = set(data.frame["collective"].dropna())
    out = []
    for name in coll.names():
        c = coll.resolve(name)
        if c.name in present:
            out.append({"name": c.name, "size_is": c.size_is, "busbw_formula": c.busbw_formula,
                        "rounding": "down to a multiple of p elements" if c.divides
                        else "down to whole elements"})
    return out


@section("method", 100)
def build(data: ReportData, opts: Options) -> Section:
    runs = [{"label": r.label, "path": str(r.path), "env": environment(r),
             "measure": measurement(r), "drift": canary.assess(canary.read(r.path)),
             "drift_warning": canary.WARNING} for r in data.runs]
    return Section("method", "Method", "method.html.j2",
                   {"runs": runs, "collectives": collectives(data),
                    "harness": holds_any(data, HARNESS_KINDS)})
