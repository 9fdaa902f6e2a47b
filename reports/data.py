"""What the reporter reads: runs from the results store (never MPI, CuPy or torch), all records
in one frame whose :data:`COLUMNS` every section may ask for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bench.store.records import load_results, read_meta
from kernels.collective import canonical

NUMERIC = ("world_size", "ranks_per_node", "nbytes", "iters", "time_us_min", "time_us_median",
           "time_us_mean", "time_us_p5", "time_us_p95", "time_us_max", "algbw_gbps", "busbw_gbps",
           "step_time_ms_median", "step_time_ms_p5", "step_time_ms_p95", "samples_per_s",
           "scaling_efficiency", "mem_params_bytes", "mem_grads_bytes", "mem_optim_bytes",
           "mem_peak_bytes", "comm_bytes_per_step")
# Columns every section may rely on (missing ones become NaN/None).
COLUMNS = ("kind", "status", "collective", "algorithm", "transport", "dtype", "op", "warmup",
           "repetitions", "wrong", "bytes_sent_max", "timer", "oversubscribed", "scenario", "error",
           "strategy", "model", "loss_max_abs_diff", *NUMERIC)
VENDOR = "native"  # the vendor collective's algorithm name: the baseline every chart compares to


@dataclass(frozen=True)
class Run:
    path: Path
    label: str
    meta: dict[str, Any]
    records: pd.DataFrame  # this run's rows of :attr:`ReportData.frame`

    @property
    def scenario(self) -> dict[str, Any]:
        """The scenario of its ``meta.json`` ({} when it holds none, or only a name)."""
        sc = self.meta.get("scenario")
        return sc if isinstance(sc, dict) else {}

    def first(self, kind: str, col: str) -> Any:
        """The first value of ``col`` among its records of ``kind`` (None when none has one)."""
        df = self.records[self.records["kind"] == kind]
        vals = df[col].dropna() if col in df else []
        return vals.iloc[0] if len(vals) else None


@dataclass(frozen=True)
class ReportData:
    runs: tuple[Run, ...]
    frame: pd.DataFrame  # all runs' records, with a ``run`` column holding the run label

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    def ok(self, kind: str) -> pd.DataFrame:
        """The records of ``kind`` that passed."""
        f = self.frame
        return f[(f["kind"] == kind) & (f["status"] == "ok")]

    def ok_collectives(self) -> pd.DataFrame:
        ok = self.ok("collective")
        return ok[ok["time_us_median"].notna()]

    def failed(self) -> pd.DataFrame:
        return self.frame[self.frame["status"] != "ok"]


def _labels(paths: Sequence[Path], metas: Sequence[dict[str, Any]]) -> list[str]:
    """Run ids from meta.json (directory name otherwise), made unique with a #n suffix."""
    out: list[str] = []
    for i, (p, m) in enumerate(zip(paths, metas)):
        label = str(m.get("run_id") or p.name)
        out.append(label if label not in out else f"{label} #{i + 1}")
    return out


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Add the columns in :data:`COLUMNS` a record set lacks; coerce numeric ones."""
    df = df.copy()
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    df["kind"] = df["kind"].fillna("collective")
    df["status"] = df["status"].fillna("ok")
    df["collective"] = df["collective"].map(canonical)  # records before 0.2 say "allreduce"
    for col in NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["oversubscribed"] = df["oversubscribed"].map(lambda v: bool(v) if v is not None
                                                    and v == v else False)
    return df


def load_runs(paths: Sequence[Path | str]) -> ReportData:
    """Read each run directory; raises :class:`bench.store.records.StoreError` (one line) if unusable."""
    dirs = [Path(p) for p in paths]
    metas = [read_meta(d) for d in dirs]
    labels = _labels(dirs, metas)
    frames, runs = [], []
    for d, m, label in zip(dirs, metas, labels):
        df = normalise(load_results(d, samples=False))  # the report plots summaries only
        df["run"] = label
        frames.append(df)
        runs.append(Run(d, label, m, df))
    frame = pd.concat(frames, ignore_index=True) if frames else normalise(pd.DataFrame())
    if "run" not in frame.columns:
        frame["run"] = pd.Series(dtype=object)
    return ReportData(tuple(runs), frame)
