"""``commbench probe``: latency and bandwidth between every pair of ranks, slow links and nodes.

Self-launched like ``commbench run`` (or inside your own mpiexec/srun job); the flags make a
``kind: probe`` scenario (:mod:`bench.probe.scenario`), so a probe can also be a scenario file
run with ``commbench run``. See docs/probe.md.
"""

from __future__ import annotations

import argparse

from bench.argtypes import UsageError, nonneg_int, out_dir, positive_float, positive_int, world_size
from bench.commands import register


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory, new or empty (default: runs/<time>-probe)")
    p.add_argument("-n", "--world-size", type=world_size, default=None,
                   help="ranks to launch, at least 2 (default: one per core, at least 2)")
    p.add_argument("--ranks-per-node", default="auto",
                   help="virtual nodes of this many consecutive ranks (default auto: by host name)")
    p.add_argument("--sizes", default="8B,4MiB",
                   help="comma-separated message sizes, each at least 1 B (default %(default)s: "
                        "latency at the smallest, bandwidth at the largest)")
    p.add_argument("--threshold", type=positive_float, default=0.25,
                   help="relative excess over its class median that flags a link or node, when "
                        "the excess is also beyond z times its noise and the spread between "
                        "links: z = Phi^-1(1 - 0.05 / tests), so that the run's chance of any "
                        "false flag is 5%% (Bonferroni over its tests; z grows with ranks and "
                        "sizes, 3.84 for 16 ranks at 2 sizes); a flagged suspect is named only "
                        "when slow again re-measured alone (default %(default)s)")
    p.add_argument("--repeats", type=positive_int, default=10,
                   help="samples per pair, size and measurement, at least 3 (default %(default)s)")
    p.add_argument("--window", type=positive_int, default=16,
                   help="messages per bandwidth sample (default %(default)s)")
    p.add_argument("--warmup", type=nonneg_int, default=1,
                   help="untimed turns before the samples (default %(default)s)")
    p.add_argument("--confirm-max", type=nonneg_int, default=16, metavar="K",
                   help="re-measure at most K suspects of the tournament, one pair at a time "
                        "against a reference pair of their class (0: no confirmation; default 16)")
    p.add_argument("--confirm-blocks", type=positive_int, default=3,
                   help="suspect blocks per confirmation, the reference measured before, between "
                        "and after them (default 3)")
    p.add_argument("--confirm-repeats", type=positive_int, default=5,
                   help="samples per confirmation block, size and measurement (default 5)")
    p.add_argument("--emulate", default=None, metavar="PROFILE",
                   help="emulate a cluster on this host: a profile (preset or file) pricing its "
                        "links, with --topology; a profile's slow: entries make a node or link slow")
    p.add_argument("--topology", default=None, help="the emulated cluster, e.g. 4x2 (with --emulate)")
    p.add_argument("--no-progress", action="store_true", help="no line per round")


def scenario_of(args: argparse.Namespace) -> object:
    """The flags as a validated probe scenario; ScenarioError (one line) when they are bad."""
    from pydantic import ValidationError

    from bench.probe.scenario import ProbeScenario
    from bench.scenario_base import ScenarioError, one_line

    raw: dict[str, object] = {
        "sizes": [s.strip() for s in str(args.sizes).split(",") if s.strip()],
        "threshold": args.threshold, "repeats": args.repeats, "window": args.window,
        "warmup": args.warmup, "confirm_max": args.confirm_max,
        "confirm_blocks": args.confirm_blocks, "confirm_repeats": args.confirm_repeats,
        "ranks_per_node": args.ranks_per_node if args.ranks_per_node == "auto"
        else _int(args.ranks_per_node),
    }
    if args.world_size is not None:
        raw["world_size"] = args.world_size
    if (args.emulate is None) != (args.topology is None):
        raise ScenarioError("--emulate PROFILE and --topology SPEC go together")
    if args.emulate is not None:
        raw["emulate"] = {"profile": args.emulate, "topology": args.topology}
    try:
        return ProbeScenario.model_validate(raw)
    except ValidationError as e:
        raise ScenarioError(one_line(e)) from None


def _int(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text  # the scenario's validation names it


def handle(args: argparse.Namespace) -> int:
    from bench.probe.launch import handle as run_probe
    from bench.scenario_base import ScenarioError

    try:
        sc = scenario_of(args)
    except ScenarioError as e:
        raise UsageError(str(e), "probe") from None
    return run_probe(args, sc)  # type: ignore[arg-type]


register("probe", "latency and bandwidth between every pair of ranks; slow links and nodes "
                  "named by host", configure, handle,
         example="--world-size 4")
