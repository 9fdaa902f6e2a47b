"""``commbench gemm``: time the model's own GEMM shapes on this device and write the fitted
achieved-compute curve into a profile that ``commbench advise --profile`` reads (docs/advise.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.advise.flags import add_shape_flags
from bench.argtypes import UsageError, int_list, out_file, positive_int
from bench.commands import needs_torch, register

MODEL = "gpt-small"  # timed when neither --model nor --params is given


def configure(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--model", help=f"a reference model whose GEMMs are timed (default "
                                      f"{MODEL})")
    add_shape_flags(p, what)
    p.add_argument("--seq", type=positive_int, default=None,
                   help="sequence length (default: the model's; 2048 with --params)")
    p.add_argument("--tensor", type=int_list, default="1,2,4,8",
                   help="tensor-parallel degrees whose shards are timed (those dividing the heads)")
    p.add_argument("--microbatch", type=positive_int, default=1, help="samples per GEMM (1)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: CUDA where torch sees one, else CPU BLAS")
    p.add_argument("--repeats", type=positive_int, default=5, help="timed calls per shape (5)")
    p.add_argument("--base", default="cpu-25gbe",
                   help="profile to extend (preset or YAML; its links and device are kept)")
    p.add_argument("--output", type=out_file, required=True, help="profile YAML to write")


def handle(args: argparse.Namespace) -> int:
    try:
        from bench.advise import gemm_bench as gb
        from bench.advise.cli import shape_from_args
        from bench.costmodel.profile import load_profile
    except ImportError as e:
        raise needs_torch(e, "gemm") from None
    if not args.params:
        args.model = args.model or MODEL
    base = load_profile(args.base)
    shape = shape_from_args(args, print)
    heads = getattr(shape.model.config, "heads", 1)
    tensors = [t for t in args.tensor if heads % t == 0]
    if not tensors:
        raise UsageError(f"--tensor {args.tensor}: no degree divides the {heads} heads", "gemm")
    device = gb.resolve_device(args.device)
    points = [gb.time_gemm(g, device, args.repeats)
              for g in gb.model_gemms(shape, tensors, args.microbatch)]
    f = gb.fit(points, base.device.get("flops_per_s"))
    print(f"# {shape.name} on {device}: {len(points)} GEMM shapes, tensor degrees "
          f"{','.join(map(str, tensors))}, micro-batch {args.microbatch}")
    print(f"{'m':>7} {'n':>7} {'k':>7} {'batch':>5} {'ms':>9} {'GFLOP/s':>9} {'eff.':>6}")
    for p in points:
        g = p.gemm
        print(f"{g.m:>7} {g.n:>7} {g.k:>7} {g.batch:>5} {p.seconds * 1e3:>9.4g} "
              f"{p.rate / 1e9:>9.4g} {f.point_efficiency(p):>6.3f}")
    print(f"# fitted: seconds = FLOPs / {f.rate:.4g} + {f.latency:.3g}; peak {f.peak:.4g} "
          f"FLOP/s, gemm_efficiency {f.efficiency:.3f}")
    out = gb.write_yaml(gb.fitted_profile(base, points, f, device, Path(args.output).stem),
                        Path(args.output))
    print(out)
    return 0


register("gemm", "time the model's GEMM shapes on this device; write the achieved-compute "
         "curve into a profile for advise", configure, handle,
         example="--model gpt-tiny --tensor 1,2 --repeats 2 --output gemm-profile.yaml")
