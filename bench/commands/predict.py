"""``commbench predict --profile P --topology 64x8 --world-sizes 8,64,512,4096 --out DIR``:
the cost model's times for clusters you don't have, written as a run (records marked
``predicted``) that ``report``, ``export`` and ``compare`` read like a measured one."""

from __future__ import annotations

import argparse
import sys

from bench.argtypes import UsageError, in_path, out_dir, positive_int, world_list
from bench.commands import new_run_dir, register


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True,
                   help="a preset name (h100-ib400, a100-ib200, pcie-100gbe, cpu-25gbe) or a "
                        "profile YAML file (e.g. from commbench calibrate)")
    p.add_argument("--topology", required=True,
                   help="NODESxRANKS (64x8) or ranks per node (8,8,4), options after ':': "
                        "leaf=N, oversub=R, nics=K, block|cyclic (64x8:leaf=16:oversub=2); or "
                        "from the launch: slurm (this job's allocation), run:DIR (a measured "
                        "run's nodes), here (this host)")
    p.add_argument("--world-sizes", type=world_list, default=None,
                   help="comma-separated world sizes, each on the topology's first ranks "
                        "(default: the whole topology)")
    p.add_argument("--collectives", default="all", help="comma-separated (default all)")
    p.add_argument("--algorithms", default=None,
                   help="comma-separated algorithm names (default: every algorithm and native)")
    p.add_argument("--sizes", default="8B..1GiB",
                   help="8B..1GiB (factor 2), 8B..1GiB:4, or a list 8B,64KiB,1GiB")
    p.add_argument("--dtypes", default="float32", help="comma-separated (default float32)")
    p.add_argument("--transport", default="model",
                   help="the records' transport field (default 'model'; name a measured run's "
                        "transport to line predictions up with it in compare)")
    p.add_argument("--max-schedule-ranks", type=positive_int, default=None,
                   help="evaluate schedules (where no closed form applies) up to this many "
                        "ranks (default 256)")
    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory to create (default: runs/<time>-predict)")
    p.add_argument("--replay", type=in_path, default=None, metavar="SCENARIO",
                   help="price a replay scenario's step (kind: replay, from commbench import) "
                        "at --world-sizes, multiples of its traced world (default: the "
                        "topology's), its groups rescaled (docs/replay.md)")


def handle(args: argparse.Namespace) -> int:
    from bench.costmodel.launch import resolve_topology
    from bench.costmodel.predict import MAX_SCHEDULE_RANKS
    from bench.costmodel.profile import load_profile
    from bench.costmodel.run import Request, all_collectives, parse_sizes, run

    out = new_run_dir(args.out, "predict", "predict")
    try:
        profile = load_profile(args.profile)
        cluster = resolve_topology(args.topology)
        worlds = tuple(args.world_sizes) if args.world_sizes else (cluster.world,)
        algs = (tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
                if args.algorithms else None)
        limit = args.max_schedule_ranks or MAX_SCHEDULE_RANKS
        if args.replay is not None:
            from bench.replay.price import replay_request

            return replay_request(args, profile, cluster, worlds, out, limit)
        req = Request(profile, cluster, worlds, all_collectives(args.collectives), algs,
                      tuple(parse_sizes(args.sizes)),
                      tuple(d.strip() for d in args.dtypes.split(",") if d.strip()),
                      args.transport, limit)
        n, skipped = run(req, out, lambda line: print(line, file=sys.stderr))
    except OSError as e:
        raise UsageError(f"writing {out}: {e.strerror or e}", "predict") from None
    more = f"; skipped cases per size in {out / 'meta.json'} (skipped)" if skipped else ""
    print(f"# {n} predicted records{more}", file=sys.stderr)
    print(out)
    return 0


register("predict", "predict collective times on a cluster you don't have (cost model)",
         configure, handle, offline=True,
         example="--profile h100-ib400 --topology 2x8 --collectives all_reduce --sizes 8GiB")
