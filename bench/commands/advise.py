"""``commbench advise``: which training strategy (data x tensor x pipeline, ZeRO stage,
microbatches, the gradients' AllReduce algorithm) is fastest and fits, and by how much
(docs/advise.md)."""

from __future__ import annotations

import argparse
import math

from bench.advise.compare import parse_compare
from bench.advise.flags import add_shape_flags
from bench.argtypes import in_path, out_dir, positive_float, positive_int, ranged_float, world_list
from bench.commands import needs_torch, new_run_dir, register


def configure(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help="a reference model (`commbench list models`: gpt-6.7b, ...)")
    what.add_argument("--from", dest="from_run", type=in_path,
                      help="a training run: predicted vs measured for its strategies, compute "
                           "from its world-size-1 steps")
    add_shape_flags(p, what)
    p.add_argument("--experts", type=positive_int, default=None,
                   help="with --params: a mixture of experts of this many experts per layer "
                        "(with --ffn; expert parallelism is searched)")
    p.add_argument("--top-k", type=positive_int, default=2, help="with --experts: experts per token (2)")
    p.add_argument("--capacity-factor", type=positive_float, default=1.25,
                   help="with --experts: assignments an expert takes, over the mean (1.25)")
    p.add_argument("--imbalance", type=ranged_float(1, math.inf, example="1.3"), default=1.0,
                   help="a mixture of experts' routing: max/mean tokens per expert (1: uniform; "
                        "a training record's moe_imbalance)")
    p.add_argument("--profile", required=True, help="cost-model profile: preset name or YAML; "
                   "needs device.memory_bytes (and device.flops_per_s without --from)")
    p.add_argument("--topology", default=None,
                   help="NODESxRANKS (64x8) etc., as for predict (default with --from: one node "
                        "of the run's largest world size)")
    p.add_argument("--world-sizes", type=world_list, default=None,
                   help="comma-separated (default: the topology's ranks; with --from: the run's)")
    p.add_argument("--batch", type=positive_int, default=None,
                   help="global batch in samples (default 1024; with --from: the run's batch "
                        "per replica x the world size)")
    p.add_argument("--seq", type=positive_int, default=None, help="sequence length of a GPT (default: "
                   "the model's; 2048 with --params)")
    p.add_argument("--precision", choices=("mixed", "fp32"), default=None,
                   help="mixed: 2-byte params/grads, K=12 (default); fp32 (default with --from)")
    p.add_argument("--bucket-mb", type=positive_float, default=25.0, help="DDP bucket cap in MiB (25)")
    p.add_argument("--context-parallel", action="store_true",
                   help="search context-parallel degrees too: the training software runs Llama "
                        "3's all-gather context parallelism (a profile's device.context_parallel)")
    p.add_argument("--top", type=positive_int, default=10, help="rows printed per world size (10)")
    p.add_argument("--interference", type=in_path, default=None,
                   help="a concurrent run (kind: concurrent): price each group with its measured "
                        "slowdown beside the others, and overlap by its measured overlap %%")
    p.add_argument("--compare", type=parse_compare, action="append", default=None,
                   metavar="LAYOUT[,LAYOUT...]",
                   help="price your own layouts beside the ranking: tp=8,pp=8,dp=24 (keys dp, tp, "
                        "pp, cp, m, v, ep, strategy, schedule, recompute; a key given again starts "
                        "the next layout; what is not named is the search's best choice)")
    p.add_argument("--all", action="store_true",
                   help="price and record every layout (default: only those that can rank in "
                        "the first --top + 1; the rows are the same)")
    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory to write (default: runs/<time>-advise)")


def handle(args: argparse.Namespace) -> int:
    try:
        from bench.advise.cli import run_advice
    except ImportError as e:
        raise needs_torch(e, "advise") from None
    out = new_run_dir(args.out, "advise", "advise")
    run_advice(args, out, print)
    print(out)
    return 0


register("advise", "which training strategy is fastest and fits, predicted at any scale",
         configure, handle, example="--model gpt-6.7b --profile h100-ib400 --topology 2x8", offline=True)
