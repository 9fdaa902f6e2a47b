"""``commbench run SCENARIO``: self-launched sweep, or the cases of the MPI job it runs in."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.argtypes import UsageError, in_path, out_dir, world_list
from bench.collective import flags, ncclfmt
from bench.collective.console import TABLES
from bench.collective.launch import world_sizes_arg
from bench.collective.scenario import (
    ScenarioError,
    load_scenario,
    parse_scenario,
)
from bench.commands import register
from bench.launch import isolate
from bench.launch.threadlevel import LEVELS as THREAD_LEVELS
from bench.scenario_base import KINDS, read_yaml
from bench.store.records import StoreError, read_meta
from kernels.registry import lazy


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=in_path, nargs="?", default=None,
                   help="scenario YAML file (e.g. scenarios/quick.yaml); optional with the axis "
                        "flags below, or with --resume (the run directory keeps its scenario)")
    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory, new or empty (default: runs/<time>-<scenario name>)")
    p.add_argument("--resume", type=in_path, default=None, metavar="RUN_DIR",
                   help="finish the cases of RUN_DIR that have no record (same scenario)")
    p.add_argument("--world-sizes", type=world_list, default=None,
                   help="comma-separated world sizes, overriding the scenario's")
    p.add_argument("--no-progress", action="store_true", help="no progress output")
    isolate.add_flag(p)
    p.add_argument("--no-report", action="store_true",
                   help="measure only: the last line is the run directory "
                        "(`commbench report RUN` writes the report later, anywhere)")
    p.add_argument("--thread-level", choices=THREAD_LEVELS, default=None,
                   help="MPI thread level to request, overriding the scenario's thread_level")
    p.add_argument("--timing-style", choices=("commbench", "osu"), default=None,
                   help="headline statistic, overriding the scenario's timing.style (osu: each "
                        "rank's mean over the loop, averaged over ranks)")
    p.add_argument("--allow-empty", action="store_true",
                   help="exit 0 when every case was skipped (default: a run that measured "
                        "nothing fails, naming why)")
    p.add_argument("--format", choices=tuple(TABLES), default=None,
                   help="the table printed while it measures: commbench's (default) or "
                        "nccl-tests' (one row per size, out of place and in place side by side "
                        "from -a native,native_inplace, and its footer)")
    flags.add_flags(p)


def with_overrides(sc: Any, args: argparse.Namespace) -> Any:
    """``sc`` with the command line's ``--thread-level`` / ``--timing-style`` applied."""
    if sc.kind != "collective":
        return sc
    update: dict[str, Any] = {}
    if getattr(args, "thread_level", None):
        update["thread_level"] = args.thread_level
    if getattr(args, "timing_style", None):
        update["timing"] = sc.timing.model_copy(update={"style": args.timing_style})
    return sc.model_copy(update=update) if update else sc


def scenario_of(args: argparse.Namespace) -> Any:
    """The scenario to run: the file, the axis flags over it (or alone), or with ``--resume``
    and no file the run directory's own. ``args.scenario`` ends up naming where it came from."""
    if args.scenario is None and args.resume is not None and not flags.given(args):
        try:
            dump = read_meta(args.resume)["scenario"]
        except (StoreError, OSError, KeyError, TypeError) as e:
            raise ScenarioError(f"--resume {args.resume}: no scenario recorded there ({e})") from None
        sc = parse_scenario(dump, f"{args.resume}/meta.json")
        args.scenario = flags.write_yaml(sc, args.resume)  # the file its ranks are given
        return sc
    if args.scenario is None and not flags.given(args):
        raise ScenarioError("give a scenario file, axis flags (-c all_reduce -b 8 -e 1M ...), or "
                            "--resume RUN_DIR")
    if not flags.given(args):
        return load_scenario(args.scenario)
    raw = read_yaml(args.scenario) if args.scenario is not None else None
    if raw is not None and not isinstance(raw, dict):
        raise ScenarioError(f"{args.scenario}: a scenario is a mapping of keys")
    if getattr(args, "format", None) == "nccl-tests" and raw is None and args.axis_algorithms is None:
        args.axis_algorithms = ",".join(ncclfmt.SIDES)  # what nccl-tests measures
    source = str(args.scenario) if args.scenario is not None else "command line"
    sc = flags.scenario_from(raw, args, source)
    if args.scenario is None:
        args.scenario = Path("command-line")
    return sc


def handle(args: argparse.Namespace) -> int:
    """The scenario's kind runs it (``bench/kinds/``) at ``--world-sizes`` or the scenario's."""
    sc = with_overrides(scenario_of(args), args)
    if getattr(args, "format", None) == "nccl-tests":
        only_vendor(sc)
    return int(lazy(KINDS.get(sc.kind).run)(args, sc, world_sizes_arg(args) or tuple(sc.world_sizes)))


def only_vendor(sc: Any) -> None:
    """``--format nccl-tests`` prints the vendor call only: its table has no algorithm column."""
    if sc.kind != "collective":
        raise UsageError(f"--format nccl-tests: prints collective sweeps; {sc.name} is of kind "
                         f"{sc.kind!r}", "run")
    for c in sc.collectives:
        if other := [a for a in sc.algorithms_for(c) if a not in ncclfmt.SIDES]:
            raise UsageError(f"--format nccl-tests: its table holds the vendor call only "
                             f"(native out of place, native_inplace in place); {c} also runs "
                             f"{', '.join(other)}: -a native,native_inplace", "run")


register("run", "run a scenario (self-launched, or inside an MPI job)", configure, handle,
         example="scenarios/quick.yaml")
