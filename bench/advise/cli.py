"""What ``commbench advise`` does with its arguments: build the question(s), answer each world
size, print the ranked tables (and predicted vs measured with ``--from``), write the run."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.advise.band import band
from bench.advise.compare import Spec, label
from bench.advise.compute import Measured
from bench.advise.custom import check_params, relative_gap
from bench.advise.question import AdviceError, Question, device_key
from bench.advise.records import record, write_run
from bench.advise.routing import Routing
from bench.advise.search import Ranked
from bench.advise.shape import Shape, custom_gpt, custom_moe, shape_of, with_seq
from bench.advise.table import print_ranked, tied
from bench.advise.timing import Timer
from bench.advise.validate import (
    PLAIN,
    idle_checks,
    idle_lines,
    idle_record,
    pairs,
    single_rank,
    training_records,
)
from bench.advise.why import why
from bench.argtypes import param_count
from bench.costmodel.model import parse_topology
from bench.costmodel.profile import load_profile
from bench.models.configs import MoEConfig
from bench.training.analytic import PRECISIONS

if TYPE_CHECKING:
    from bench.models.base import ModelSpec

Say = Callable[[str], None]


def shape_from_args(args: argparse.Namespace, say: Say) -> Shape:
    """The model of ``--model`` (with ``--seq``) or of ``--params`` with its shape."""
    if args.model:
        from bench.models import MODELS  # torch: the named model's parameters

        model = MODELS.get(args.model)
        return routed(shape_of(with_seq(model, args.seq) if args.seq else model), args)
    missing = [k for k in ("layers", "hidden", "heads") if getattr(args, k) is None]
    if missing:
        raise AdviceError(f"--params needs the model's shape: --{', --'.join(missing)} "
                          f"(communication depends on layers, width and heads)")
    shape = routed(shape_of(custom_model(args)), args)
    try:
        check_params(args.params, shape.total)
    except ValueError as e:
        raise AdviceError(str(e)) from None
    if getattr(args, "kv_heads", None) is not None:
        try:
            shape = dataclasses.replace(shape, kv_heads=args.kv_heads)
        except ValueError as e:
            raise AdviceError(f"--kv-heads: {e}") from None
    say(f"# {shape.name}: {shape.total / 1e9:.2f}B parameters from the shape (--params "
        f"{args.params}: {relative_gap(param_count(args.params), shape.total):.0%} apart)")
    return shape


def custom_model(args: argparse.Namespace) -> ModelSpec:
    """The GPT of ``--layers --hidden --heads``, or with ``--experts`` its mixture of experts."""
    seq = args.seq or 2048
    if getattr(args, "experts", None) is None:
        try:
            return custom_gpt(args.layers, args.hidden, args.heads, seq, args.vocab,
                              args.ffn or 0, args.gated, args.kv_heads or 0)
        except ValueError as e:
            raise AdviceError(str(e)) from None
    if args.ffn is None:
        raise AdviceError("--experts needs --ffn, each expert's width (Mixtral 8x7B: 14336)")
    try:
        return custom_moe(MoEConfig(layers=args.layers, heads=args.heads, embd=args.hidden,
                                    vocab=args.vocab, seq_len=seq, experts=args.experts,
                                    top_k=args.top_k, ffn=args.ffn,
                                    capacity_factor=args.capacity_factor))
    except ValueError as e:
        raise AdviceError(str(e)) from None


def routed(shape: Shape, args: argparse.Namespace) -> Shape:
    """``shape`` priced with ``--imbalance`` (a mixture of experts; refused for another model)."""
    rho = getattr(args, "imbalance", 1.0)
    if rho == 1.0:
        return shape
    if not isinstance(shape.model.config, MoEConfig):
        raise AdviceError(f"--imbalance: {shape.name} has no experts")
    return dataclasses.replace(shape, routing=Routing(imbalance=rho))


def run_advice(args: argparse.Namespace, out: Path, say: Say) -> None:
    profile = load_profile(args.profile)
    device_key(profile, "memory_bytes")
    if args.context_parallel:  # the software runs it (Software)
        profile = dataclasses.replace(profile, device={**profile.device, "context_parallel": True})
    if args.from_run:
        recs, meta = _from_run(args, profile, say)
    else:
        recs, meta = _direct(args, profile, say)
    write_run(out, recs, {**meta, "profile": profile.provenance()})


def _advise(q: Question, worlds: list[int], say: Say, top: int, every: bool = False,
            specs: Sequence[Spec] = ()) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Answer ``q`` at each world size, printing its ranked tables: its records and their context.
    Only the first ``top`` + 1 (the runner-up gives the margin) are priced unless ``every``;
    ``specs``: the user's own layouts (``--compare``), priced beside them."""
    jobs = q.jobs()
    err = band()
    ctx = {"topology": q.cluster.spec, "global_batch": q.global_batch,
           "compute_source": jobs(1).compute.describe, "precision": q.precision.name}
    recs = []
    for w in worlds:
        ranked = q.answer(w, jobs, None if every else top + 1)
        left = f" ({ranked.pruned} left unpriced: none can rank in the first {top + 1})" \
            if ranked.pruned else ""
        say(f"## {q.shape.name} on {w} ranks ({q.cluster.place(w).describe()}), global batch "
            f"{q.global_batch}, {q.precision.name} precision, "
            f"{len(ranked.results) + ranked.pruned} layouts{left}")
        best = ranked.best
        mine = [(label(s), r) for s in specs for r in [q.compare(w, s, jobs)]]
        compared = [(name, r, why(best, r, jobs, q.global_batch)
                     if best is not None and r.layout != best.layout else "")
                    for name, r in mine]
        peak = q.profile.device.get("flops_per_s")
        flops = (q.shape.flops_per_sample, float(peak)) if peak else None
        print_ranked(ranked, jobs(1).memory_limit, top, say, err, compared, flops)
        n = tied(ranked, err)
        recs += [record(r, i, ranked, q.shape.name, ctx, err, r.fits and i <= n)
                 for i, r in enumerate(ranked.results, 1)]
        recs += [record(r, 0, ranked, q.shape.name, ctx, err,
                        best is not None and r.fits and r.step.time <= best.step.time * (1 + err.rank),
                        name) for name, r in mine]
    return recs, ctx


def _direct(args: argparse.Namespace, profile: Any, say: Say
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if not args.topology:
        raise AdviceError("--topology is needed (NODESxRANKS, e.g. 64x8)")
    cluster = parse_topology(args.topology)
    shape = shape_from_args(args, say)
    measured = None
    if args.interference is not None:  # a concurrent run's slowdowns and overlap, said
        from bench.advise.interference import load

        measured = load(args.interference)
        say(f"# {measured.describe()}")
    q = Question(shape, profile, cluster, args.batch or 1024,
                 PRECISIONS[args.precision or "mixed"], bucket_mb=args.bucket_mb,
                 measured=measured)
    worlds = list(args.world_sizes or [cluster.world])
    recs, ctx = _advise(q, worlds, say, args.top, args.all,
                        [s for v in args.compare or () for s in v])
    return recs, {"model": shape.name, "world_sizes": worlds, **ctx}


def _from_run(args: argparse.Namespace, profile: Any, say: Say
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from bench.models import MODELS

    train = training_records(args.from_run)
    if not train:
        raise AdviceError(f"{args.from_run}: no successful training records")
    run_worlds = sorted({int(r["world_size"]) for r in train})
    cluster = parse_topology(args.topology or f"1x{max(run_worlds)}")
    limit = device_key(profile, "memory_bytes")
    timer = Timer(profile, cluster)
    recs: list[dict[str, Any]] = []
    say("## predicted vs measured step time (ms), compute from each strategy's world-size-1 step")
    say(f"{'model':<10} {'strategy':<28} {'ranks':>5} {'measured':>9} {'predicted':>9} "
        f"{'[no-overlap, full]':>19} {'error':>7}")
    errors: dict[int, list[float]] = {}
    for pr in pairs(train, timer, limit):
        st = pr.predicted.step
        err = (st.time - pr.measured_s) / pr.measured_s
        errors.setdefault(pr.world, []).append(abs(err))
        say(f"{pr.model:<10} {pr.strategy:<28} {pr.world:>5} {pr.measured_s * 1e3:>9.3g} "
            f"{st.time * 1e3:>9.3g} [{st.no_overlap * 1e3:.3g}, {st.full_overlap * 1e3:.3g}]"
            f"{'':>2} {err:>+7.0%}")
        ranked = Ranked(pr.world, [pr.predicted])
        recs.append({**record(pr.predicted, 0, ranked, pr.model,
                              {"topology": cluster.spec, "precision": "fp32",
                               "compute_source": "measured world-size-1 step"}),
                     "strategy": pr.strategy, "measured_step_time_ms": pr.measured_s * 1e3,
                     "prediction_error": err, "validation": True})
    for w, errs in sorted(errors.items()):
        errs.sort()
        say(f"# {w} ranks: median |error| {errs[len(errs) // 2]:.0%}, worst {errs[-1]:.0%} "
            f"over {len(errs)} cases")
    checks = idle_checks(train)
    for line in idle_lines(checks):
        say(line)
    recs += [idle_record(c, {"topology": cluster.spec}) for c in checks]
    worlds = list(args.world_sizes or run_worlds)
    for model in sorted({r["model"] for r in train}):
        one = single_rank(train, model, PLAIN)
        if one is None:
            continue
        batch = int(one["batch_size_per_replica"])
        compute = Measured(one["step_time_ms_median"] / 1e3, "ddp at 1 rank")
        for w in worlds:
            q = Question(shape_of(MODELS.get(model)), profile, cluster, args.batch or batch * w,
                         PRECISIONS[args.precision or "fp32"], compute, args.bucket_mb)
            recs += _advise(q, [w], say, args.top, args.all)[0]
    return recs, {"from_run": str(args.from_run), "world_sizes": worlds,
                  "topology": cluster.spec}
