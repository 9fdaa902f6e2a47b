"""``commbench memory --model gpt-1.3b --world-sizes 8,64,512``: analytic per-rank memory of
every strategy (nothing is run; parameter shapes come from the meta device)."""

from __future__ import annotations

import argparse
import sys

from bench.commands import register

DEFAULT_STRATEGIES = "ddp,zero1,zero2,zero3,tensor,pipeline:1f1b,hybrid:8"
GIB = 2**30


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="gpt-1.3b", help="reference model name (default gpt-1.3b)")
    p.add_argument("--world-sizes", default="8,64,512", help="comma-separated world sizes")
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES,
                   help=f"comma-separated strategies as in scenarios (default {DEFAULT_STRATEGIES})")
    p.add_argument("--precision", choices=("mixed", "fp32"), default="mixed",
                   help="mixed: 2-byte params/grads, K=12 (ZeRO paper); fp32: what CPU tests train")
    p.add_argument("--batch-size", type=int, default=8,
                   help="samples per data-parallel replica, for activations (default 8)")
    p.add_argument("--microbatches", type=int, default=8, help="pipeline microbatches (default 8)")


def handle(args: argparse.Namespace) -> int:
    try:
        from bench.models import MODELS
        from bench.training.analytic import PRECISIONS, parameters, predict
        from bench.training.scenario import StrategySpec, _from_string, check_case
    except ImportError as e:
        print(f"commbench: memory needs torch (pip install 'commbench[training]'): {e}",
              file=sys.stderr)
        return 2
    try:
        model = MODELS.get(args.model)
        sizes = [int(x) for x in args.world_sizes.split(",")]
        specs = []
        for s in args.strategies.split(","):
            raw = _from_string(s)
            if raw["name"] == "pipeline":
                raw["microbatches"] = args.microbatches
            specs.append(StrategySpec.model_validate(raw))
    except (KeyError, ValueError) as e:
        print(f"commbench: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    prec = PRECISIONS[args.precision]
    ps = parameters(model)
    total = sum(_numel(p.shape) for p in ps)
    print(f"# {model.name}: {total / 1e9:.3f}B parameters; per-rank GiB, rank 0, {prec.name} "
          f"precision (params {prec.param_bytes} B, grads {prec.grad_bytes} B, optimizer "
          f"K={prec.optim_per_param} B per parameter); batch {args.batch_size} per replica")
    print(f"{'strategy':>20} {'ranks':>6} {'params':>8} {'grads':>8} {'optim':>8} "
          f"{'transient':>9} {'activ.':>8} {'total':>8}")
    for spec in specs:
        for w in sizes:
            try:
                check_case(spec, model, w, args.batch_size)
            except ValueError as e:
                print(f"{spec.label:>20} {w:>6}   n/a: {str(e).split(': ', 1)[-1]}")
                continue
            e = predict(model, spec, w, 0, prec, batch=args.batch_size, params=ps)
            act = "-" if e.activations is None else f"{e.activations / GIB:8.2f}"
            print(f"{spec.label:>20} {w:>6} {e.params / GIB:8.2f} {e.grads / GIB:8.2f} "
                  f"{e.optim / GIB:8.2f} {e.transient / GIB:9.2f} {act:>8} {e.total / GIB:8.2f}")
    return 0


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


register("memory", "analytic per-rank memory of each training strategy (no run)", configure, handle)
