"""``commbench bringup``: a shortcut for a ``kind: bringup`` scenario (:mod:`bench.bringup.scenario`)
whose flags are generated from its fields; run like ``commbench run``. docs/bringup.md."""

from __future__ import annotations

import argparse
from typing import Any

from bench.argtypes import out_dir
from bench.commands import register
from bench.commands.probe import given, model_flags, run_kind, validated
from bench.launch import isolate


def configure(p: argparse.ArgumentParser) -> None:
    from bench.bringup.scenario import BringupScenario

    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory (default: runs/<time>-bringup)")
    p.set_defaults(bringup_fields=model_flags(p, BringupScenario, skip=("timing", "expect")), resume=None)
    p.add_argument("--no-progress", action="store_true", help="no line per stage round")
    isolate.add_flag(p)
    p.add_argument("--no-report", action="store_true", help="no HTML report at the end")


def scenario_of(args: argparse.Namespace) -> Any:
    """The flags as a validated bring-up scenario; ScenarioError (one line) when they are bad."""
    from bench.bringup.scenario import BringupScenario

    return validated(BringupScenario, given(args, args.bringup_fields))


def handle(args: argparse.Namespace) -> int:
    from bench.bringup.launch import handle as run_bringup

    return run_kind(args, "bringup", scenario_of, run_bringup)


register("bringup", "bring a cluster up: each host, pairs of hosts, all, scale; a verdict per "
                    "host and link", configure, handle, example="--world-size 2 --sizes 64KiB",
         results=(0, 1))
