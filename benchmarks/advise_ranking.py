"""Benchmark: ``advise``'s ranking held against same-cluster sweeps of measured layouts
(benchmarks/ranking_sweeps.yaml, each row with its source).

    .venv/bin/python -m benchmarks.advise_ranking [--only BLOOM,MT-NLG] [--fit] [--write-band]

Each row's layout is priced as it ran (its tensor, pipeline and data degrees, micro-batch size,
schedule, data strategy, recomputation and software) and held against its measured s/it. Per
sweep: Spearman's ρ between the predicted and the measured order of cost (GPU-seconds per
sequence, gpus x s/it / batch: at one world size the order of s/it; measured costs within the
sweep's stated noise are ties), the measured regret of advise's pick among the measured layouts
(the layout it predicts cheapest among those it predicts to fit: its measured cost / the best
measured cost - 1), out-of-memory agreement (predicted fits against measured ran), each row's
error, and the sweep's bias (median signed error) with each row's error relative to it.
Target: ρ >= 0.8 on every sweep of >= 3 layouts, regret <= 5 %, every row within 15 %.

The error band advise prints (docs/advise.md, Uncertainty) is derived here from the ``check``
sweeps only (kept apart from the ``fit`` sweeps): ``step`` = the 80th percentile of |error| of
their rows (how far one predicted step may be off), ``rank`` = the 80th percentile of their
rows' |error - sweep bias| (how far two layouts of one cluster may be off against each other:
what ties layouts). ``--write-band`` writes them to bench/advise/band.yaml.

``--fit`` fits the one constant fitted on these figures, the A100's ``device.gemm_sustained``
(the share of the matmul microbenchmark's rate a training run's GEMMs sustain), on the fit
sweeps' rows only: the value in (0, 1] whose median signed error over them is zero (bisection;
1 where the model is already slow), written into the A100 profiles (FITTED) before the report.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from bench.argtypes import OneLineParser, name_list
from benchmarks import results

DATA = Path(__file__).with_name("ranking_sweeps.yaml")
BAND = Path(__file__).resolve().parents[1] / "bench" / "advise" / "band.yaml"
# the profiles whose device.gemm_sustained --fit writes: the A100 preset and Jean Zay's
FITTED = (Path(__file__).resolve().parents[1] / "bench" / "costmodel" / "profiles" / "a100-ib200.yaml",
          DATA.parent / "profiles" / "jean-zay-a100-opa.yaml")
FIT_KEY = "gemm_sustained"
QUANTILE = 0.8  # the band's statistic: this quantile of |error|


@dataclass(frozen=True)
class Row:
    gpus: int
    tp: int
    pp: int
    mbs: int
    batch: int
    v: int
    measured_s: float | None  # None: out of memory
    dp: str
    recompute: str
    software: Mapping[str, object]
    source: str
    fit: bool = True  # in the fit (of a fit sweep)

    @property
    def data(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def label(self) -> str:
        v = f" v{self.v}" if self.v > 1 else ""
        rc = {"full": "", "selective": " sel", "none": " norc"}[self.recompute]
        return f"{self.gpus} tp{self.tp} pp{self.pp}{v} dp{self.data} mbs{self.mbs} {self.dp}{rc}"


@dataclass(frozen=True)
class Sweep:
    name: str
    role: str
    model: Mapping[str, int]
    profile: str
    grad_bytes: int
    noise: float
    rows: tuple[Row, ...]


def megatron_flops(m: Mapping[str, int], batch: int) -> float:
    """Megatron-LM's FLOPs per iteration (recomputation counted), arXiv 2104.04473."""
    s, h, L, V = m["seq"], m["hidden"], m["layers"], m["vocab"]
    return 96 * batch * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def sweeps() -> list[Sweep]:
    raw = yaml.safe_load(DATA.read_text())
    out = []
    for sw in raw["sweeps"]:
        rows = []
        for r in sw["rows"]:
            if "s_it" in r:
                measured = float(r["s_it"])
            elif "tflops" in r:
                measured = megatron_flops(sw["model"], r["batch"]) / (r["gpus"] * r["tflops"] * 1e12)
            else:
                measured = None if r.get("oom") else _missing(sw["name"], r)
            rows.append(Row(r["gpus"], r["tp"], r["pp"], r["mbs"], r["batch"], r.get("v", 1),
                            measured, r.get("dp", sw["dp"]), r.get("recompute", sw["recompute"]),
                            MappingProxyType({**sw["software"], **r.get("software", {})}),
                            r["source"], bool(r.get("fit", True))))
        prof = sw["profile"]
        if prof.endswith(".yaml"):
            prof = str(DATA.parent / prof)
        out.append(Sweep(sw["name"], sw["role"], sw["model"], prof, sw["grad_bytes"],
                         float(sw["noise"]), tuple(rows)))
    return out


def _missing(name: str, row: Mapping[str, Any]) -> float:
    raise ValueError(f"{DATA.name}: sweep {name!r}: a row needs s_it, tflops or oom: {row}")


@functools.cache
def _shape(layers: int, hidden: int, heads: int, seq: int, vocab: int):  # type: ignore[no-untyped-def]
    from bench.advise.shape import custom_gpt, shape_of

    return shape_of(custom_gpt(layers, hidden, heads, seq, vocab))


def question(sweep: Sweep, row: Row, device: Mapping[str, object] | None = None):  # type: ignore[no-untyped-def]
    """advise's question for the row: its model, cluster, batch, precision and software."""
    from bench.advise.question import Question
    from bench.costmodel.model import parse_topology
    from bench.costmodel.profile import load_profile
    from bench.training.analytic import MIXED

    m = sweep.model
    shape = _shape(m["layers"], m["hidden"], m["heads"], m["seq"], m["vocab"])
    prof = load_profile(sweep.profile)
    prof = dataclasses.replace(prof, device={**prof.device, **row.software, **(device or {})})
    prec = MIXED if sweep.grad_bytes == MIXED.grad_bytes else dataclasses.replace(
        MIXED, name=f"{MIXED.name}, {8 * sweep.grad_bytes}-bit gradients",
        grad_bytes=sweep.grad_bytes)
    return Question(shape, prof, parse_topology(f"{row.gpus // 8}x8"), row.batch, prec)


def price(sweep: Sweep, row: Row, device: Mapping[str, object] | None = None):  # type: ignore[no-untyped-def]
    """The row's layout as it ran, priced: a :class:`bench.advise.evaluate.Result`; ``device``:
    profile keys set over the sweep's (a fit's trial value)."""
    from bench.advise.evaluate import evaluate
    from bench.advise.layout import Layout

    q = question(sweep, row, device)
    per_replica = row.batch // row.data
    lay = Layout(row.data, row.tp, row.pp, dp=row.dp, microbatches=per_replica // row.mbs,
                 schedule="interleaved" if row.v > 1 else "1f1b", stages_per_rank=row.v)
    return evaluate(q.jobs()(per_replica), lay.recomputing(row.recompute))


@dataclass(frozen=True)
class Scored:
    rho: float | None
    regret: float | None  # None: the pick ran out of memory, or nothing predicted to fit
    oom_agree: int
    errors: list[float | None]  # per row (None: out of memory)
    bias: float | None


def score(sweep: Sweep, predicted: list[float], fits: list[bool]) -> Scored:
    from bench.advise.ranking import percentile, spearman, tied_ranks

    ran = [i for i, r in enumerate(sweep.rows) if r.measured_s is not None]
    cost = {i: sweep.rows[i].gpus * sweep.rows[i].measured_s / sweep.rows[i].batch  # type: ignore[operator]
            for i in ran}
    pcost = [r.gpus * p / r.batch for r, p in zip(sweep.rows, predicted)]
    rho = spearman(tied_ranks([cost[i] for i in ran], sweep.noise),
                   tied_ranks([pcost[i] for i in ran])) if len(ran) > 1 else None
    fitting = [i for i in range(len(sweep.rows)) if fits[i]]
    regret = None
    if fitting and ran:
        pick = min(fitting, key=lambda i: pcost[i])
        regret = cost[pick] / min(cost.values()) - 1 if pick in cost else None
    agree = sum(fits[i] == (r.measured_s is not None) for i, r in enumerate(sweep.rows))
    errors = [p / r.measured_s - 1 if r.measured_s is not None else None
              for r, p in zip(sweep.rows, predicted)]
    known = [e for e in errors if e is not None]
    return Scored(rho, regret, agree, errors, percentile(known, 0.5) if known else None)


def fit_sustained(all_sweeps: list[Sweep]) -> float:
    """``device.gemm_sustained`` fitted on the fit sweeps' fit rows (module docstring),
    written into :data:`FITTED`; prints what it did."""
    from bench.advise.ranking import percentile

    rows = [(s, r) for s in all_sweeps if s.role == "fit" for r in s.rows
            if r.fit and r.measured_s is not None]

    def median_error(value: float) -> float:
        return percentile([price(s, r, {FIT_KEY: value}).step.time / r.measured_s - 1  # type: ignore[operator]
                           for s, r in rows], 0.5)

    lo, hi = 0.5, 1.0  # the error falls as the sustained share rises
    if median_error(hi) >= 0:
        value = hi
    else:
        for _ in range(20):  # to 5e-7
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if median_error(mid) > 0 else (lo, mid)
        value = round((lo + hi) / 2, 4)
    for path in FITTED:
        text = path.read_text()
        line = f"  {FIT_KEY}: {value}\n"
        if f"  {FIT_KEY}:" in text:
            text = re.sub(rf"^  {FIT_KEY}:.*\n", line, text, flags=re.M)
        else:
            text = re.sub(r"^(  gemm_efficiency:.*\n)", rf"\1{line}", text, flags=re.M)
        path.write_text(text)
    print(f"# fitted device.{FIT_KEY} = {value} on the {len(rows)} fit rows of the fit sweeps "
          f"(median signed error {median_error(value):+.1%}); written into "
          f"{', '.join(p.name for p in FITTED)}")
    return value


def first_choice(sweep: Sweep, res: list) -> str:  # type: ignore[type-arg]
    """advise's own first choice at the world size of the sweep's best measured layout, among
    the layouts the sweep's software runs (its data strategies and recomputations), against its
    prediction of that measured layout: how much faster it claims to be."""
    ran = [i for i, r in enumerate(sweep.rows) if r.measured_s is not None]
    if not ran:
        return "no measured layout"
    best = min(ran, key=lambda i: sweep.rows[i].gpus * sweep.rows[i].measured_s  # type: ignore[operator]
               / sweep.rows[i].batch)
    row = sweep.rows[best]
    dps = {r.dp for r in sweep.rows if r.gpus == row.gpus}
    recs = {r.recompute for r in sweep.rows if r.gpus == row.gpus}
    q = question(sweep, row)
    ranked = q.answer(row.gpus, keep=2, select=lambda lay: lay.dp in dps and lay.recompute in recs)
    top = ranked.results[0]
    gain = res[best].step.time / top.step.time - 1
    return (f"advise's first choice at {row.gpus} GPUs on the sweep's software: "
            f"{top.layout.label}, {top.step.time:.1f} s/it: a {gain:+.1%} speed-up claimed over "
            f"its prediction of the best measured layout ({row.label})")


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", type=name_list, default=None,
                    help="sweeps whose name contains one of these (BLOOM,MT-NLG)")
    ap.add_argument("--fit", action="store_true",
                    help="fit device.gemm_sustained on the fit sweeps and write it into the A100 "
                         "profiles first")
    ap.add_argument("--write-band", action="store_true",
                    help="write the check sweeps' error band to bench/advise/band.yaml")
    args = ap.parse_args()
    if args.fit:
        if args.only:
            print("--fit needs every sweep (no --only)", file=sys.stderr)
            raise SystemExit(2)
        fit_sustained(sweeps())
    chosen = [s for s in sweeps() if not args.only or any(o in s.name for o in args.only)]
    abs_err: dict[str, list[float]] = {"fit": [], "check": []}
    rel_err: dict[str, list[float]] = {"fit": [], "check": []}
    met = {"rho": 0, "regret": 0, "of": 0}
    for sw in chosen:
        res = [price(sw, r) for r in sw.rows]
        sc = score(sw, [x.step.time for x in res], [x.fits for x in res])
        rho = "-" if sc.rho is None else f"{sc.rho:+.2f}"
        regret = "OOM/none" if sc.regret is None else f"{sc.regret:+.1%}"
        bias = "-" if sc.bias is None else f"{sc.bias:+.0%}"
        print(f"## {sw.name} [{sw.role}] ({len(sw.rows)} layouts, noise {sw.noise:.0%}): "
              f"rho {rho}, regret of the pick {regret}, OOM agreement {sc.oom_agree}/"
              f"{len(sw.rows)}, bias {bias}")
        for r, x, e in zip(sw.rows, res, sc.errors):
            meas = "OOM" if r.measured_s is None else f"{r.measured_s:.2f}"
            err = "-" if e is None else f"{e:+.0%}"
            rel = "-" if e is None or sc.bias is None else f"{e - sc.bias:+.0%}"
            fit = "fits" if x.fits else f"NO FIT {x.memory.total / 2**30:.0f} GiB"
            print(f"   {r.label:<44} measured {meas:>7} predicted {x.step.time:>7.2f} s/it "
                  f"err {err:>5} (vs bias {rel:>5}) {fit}")
            if e is not None:
                abs_err[sw.role].append(abs(e))
                if sc.bias is not None:
                    rel_err[sw.role].append(abs(e - sc.bias))
        print(f"   {first_choice(sw, res)}")
        if len(sw.rows) >= 3:
            met["of"] += 1
            met["rho"] += sc.rho is not None and sc.rho >= 0.8
            met["regret"] += sc.regret is not None and sc.regret <= 0.05
    from bench.advise.ranking import percentile

    every = abs_err["fit"] + abs_err["check"]
    if every:
        inside = sum(e <= 0.15 for e in every)
        print(f"# {inside} of {len(every)} rows within 15 % (median |error| "
              f"{percentile(every, 0.5):.0%}, worst {max(every):.0%}); of {met['of']} sweeps of "
              f">= 3 layouts: rho >= 0.8 on {met['rho']}, pick within 5 % on {met['regret']}")
    for role in ("fit", "check"):
        if abs_err[role]:
            print(f"# {role} rows ({len(abs_err[role])}): |error| median "
                  f"{percentile(abs_err[role], 0.5):.1%}, p80 {percentile(abs_err[role], QUANTILE):.1%}; "
                  f"|error - sweep bias| median {percentile(rel_err[role], 0.5):.1%}, p80 "
                  f"{percentile(rel_err[role], QUANTILE):.1%}")
    if args.write_band:
        if args.only or not abs_err["check"]:
            print("--write-band needs every sweep (no --only)", file=sys.stderr)
            raise SystemExit(2)
        band = {"step": round(percentile(abs_err["check"], QUANTILE), 4),
                "rank": round(percentile(rel_err["check"], QUANTILE), 4),
                "statistic": f"p{QUANTILE * 100:.0f} over the {len(abs_err['check'])} rows of the "
                             f"check sweeps of {DATA.name}: step = |predicted / measured - 1|, "
                             f"rank = |error - its sweep's median error|",
                "command": "python -m benchmarks.advise_ranking --write-band",
                "date": dt.datetime.now(dt.timezone.utc).date().isoformat()}
        BAND.write_text("# Written by benchmarks/advise_ranking.py --write-band; do not edit.\n"
                        + yaml.safe_dump(band, sort_keys=False))
        print(f"# wrote {BAND.relative_to(BAND.parents[2])}: step ±{band['step']:.1%}, "
              f"rank ±{band['rank']:.1%}")


if __name__ == "__main__":
    raise SystemExit(results.run(__file__, main))
