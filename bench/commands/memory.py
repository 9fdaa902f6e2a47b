"""``commbench memory --model gpt-1.3b --world-sizes 8,64,512``: analytic per-rank memory of
every strategy (nothing is run; parameter shapes come from the meta device)."""

from __future__ import annotations

import argparse
import math

from bench.argtypes import UsageError, param_count, params, positive_int, world_list
from bench.commands import needs_torch, register

UNITS = {"GiB": 2**30, "GB": 10**9}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="gpt-1.3b", help="reference model name (default gpt-1.3b)")
    p.add_argument("--params", type=params, default=None,
                   help="a model by parameter count (7.5B): with --layers --hidden --heads a GPT of "
                        "that shape, else Ψ parameters for model states only (ZeRO's accounting)")
    p.add_argument("--layers", type=positive_int, default=None, help="with --params: transformer blocks")
    p.add_argument("--hidden", type=positive_int, default=None, help="with --params: model width")
    p.add_argument("--heads", type=positive_int, default=None, help="with --params: attention heads")
    p.add_argument("--units", choices=tuple(UNITS), default="GiB",
                   help="GiB (2^30 bytes, default) or GB (1e9, the ZeRO paper's)")
    p.add_argument("--world-sizes", type=world_list, default="8,64,512", help="comma-separated world sizes")
    p.add_argument("--strategies", default=None,
                   help="comma-separated strategies as in scenarios (default: each strategy's "
                        "own entry, ddp,zero1,zero2,zero3,tensor,pipeline:1f1b,hybrid:8 and any "
                        "other that names one)")
    p.add_argument("--precision", choices=("mixed", "fp32"), default="mixed",
                   help="mixed: 2-byte params/grads, K=12 (ZeRO paper); fp32: what CPU tests train")
    p.add_argument("--batch-size", type=positive_int, default=8,
                   help="samples per data-parallel replica, for activations (default 8)")
    p.add_argument("--microbatches", type=positive_int, default=8, help="pipeline microbatches (default 8)")


def handle(args: argparse.Namespace) -> int:
    try:
        from bench.models import MODELS
        from bench.training.analytic import PRECISIONS, parameters, predict
        from bench.training.scenario import StrategySpec, _from_string, check_case
        from bench.training.strategy import strategies
    except ImportError as e:
        raise needs_torch(e, "memory") from None
    model, ps = _model(args, MODELS.get)
    sizes = args.world_sizes
    specs = []
    reg = strategies()
    listed = args.strategies or ",".join(t for t in (reg.get(n).table for n in reg) if t)
    for s in listed.split(","):
        try:
            raw = _from_string(s)
            takes = reg.get(raw["name"]).option_names  # an unknown name: one line now
            if "microbatches" in takes:
                raw["microbatches"] = args.microbatches
            specs.append(StrategySpec.model_validate(raw))
        except ValueError as e:  # the --strategies text: a bad entry is the user's
            raise UsageError((str(e).splitlines() or [""])[0], "memory") from None
    prec, unit = PRECISIONS[args.precision], UNITS[args.units]
    ps = ps if ps is not None else parameters(model)
    total = sum(math.prod(p.shape) for p in ps)
    if args.params and args.layers is not None:  # a GPT of that shape: the two must agree
        from bench.advise.custom import check_params

        check_params(args.params, total)
    print(f"# {model.name}: {total / 1e9:.3f}B parameters; per-rank {args.units} of the rank that "
          f"decides whether it fits (the heaviest: `rank`), {prec.name} "
          f"precision (params {prec.param_bytes} B, grads {prec.grad_bytes} B, optimizer "
          f"K={prec.optim_per_param} B per parameter); batch {args.batch_size} per replica")
    print(f"{'strategy':>20} {'ranks':>6} {'params':>8} {'grads':>8} {'optim':>8} "
          f"{'transient':>9} {'activ.':>8} {'total':>8} {'rank':>5}")
    for spec in specs:
        for w in sizes:
            try:
                if args.params and args.layers is None and spec.strategy.needs_shape:
                    raise ValueError(f"{spec.name} needs the model's shape (--layers --hidden "
                                     f"--heads)")
                check_case(spec, model, w, args.batch_size)
            except ValueError as e:
                print(f"{spec.label:>20} {w:>6}   n/a: {str(e).split(': ', 1)[-1]}")
                continue
            r, e = _heaviest(model, spec, w, prec, args.batch_size, ps, predict)
            act = "-" if e.activations is None else f"{e.activations / unit:8.2f}"
            print(f"{spec.label:>20} {w:>6} {e.params / unit:8.2f} {e.grads / unit:8.2f} "
                  f"{e.optim / unit:8.2f} {e.transient / unit:9.2f} {act:>8} {e.total / unit:8.2f}"
                  f" {r:>5}")
    if args.params:
        _zero_stages(model, ps, sizes, prec, args.units)
    return 0


def _heaviest(model, spec, world: int, prec, batch: int, ps, predict):  # type: ignore[no-untyped-def]
    """(rank, estimate) of the rank holding the most (the first of equals): a pipeline's
    stages, a tensor group's shards and ZeRO's uneven chunks differ by rank; rank 0 alone can
    understate the one that decides whether the strategy fits."""
    got = [(r, predict(model, spec, world, r, prec, batch=batch, params=ps)) for r in range(world)]
    return max(got, key=lambda x: (x[1].total, -x[0]))


def _model(args: argparse.Namespace, get):  # type: ignore[no-untyped-def]
    """(model, parameters or None): a named model, a GPT by --params and shape, or Ψ flat."""
    if not args.params:
        return get(args.model), None
    from bench.advise.custom import flat_model
    from bench.advise.shape import custom_gpt

    if args.layers is not None and args.hidden and args.heads:
        return custom_gpt(args.layers, args.hidden, args.heads, 2048), None
    if args.layers is not None or args.hidden or args.heads:
        raise UsageError("--params with a shape needs all of --layers, --hidden and --heads",
                         "memory")
    return flat_model(param_count(args.params))


def _zero_stages(model, ps, sizes, prec, units: str) -> None:  # type: ignore[no-untyped-def]
    from bench.advise.zero_paper import STAGES, stages

    print(f"# model states per rank ({units}) by the ZeRO paper's stages (Rajbhandari et al. "
          f"2020, Figure 1), K={prec.optim_per_param}")
    print(f"{'ranks':>6} " + " ".join(f"{s:>10}" for s in STAGES))
    for w in sizes:
        got = stages(model, ps, w, prec)
        print(f"{w:>6} " + " ".join(f"{got[s] / UNITS[units]:10.2f}" for s in STAGES))


register("memory", "analytic per-rank memory of each training strategy (no run)", configure, handle,
         example="--params 7.5B --world-sizes 8", offline=True)
