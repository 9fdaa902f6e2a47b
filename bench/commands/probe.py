"""``commbench probe``: a shortcut for a ``kind: probe`` scenario (:mod:`bench.probe.scenario`), run
like ``commbench run``; its flags are generated from the scenario's fields, each default stated
there once. docs/probe.md."""

from __future__ import annotations

import argparse
import typing
from typing import TYPE_CHECKING, Any

from bench.argtypes import name_list, nonneg_int, out_dir, positive_float, positive_int, world_size
from bench.commands import register, said
from bench.launch import isolate

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

NOT_FLAGS = ("name", "description", "kind", "emulate")  # emulate: --emulate with --topology
SHORT = {"world_size": "-n"}
TYPES = {"world_size": world_size}


def _argtype(name: str, f: FieldInfo) -> Any:
    """A checked type (:mod:`bench.argtypes`) by the field's type and bound; None: text the
    scenario's validation checks."""
    if name in TYPES:
        return TYPES[name]
    if typing.get_origin(f.annotation) is list:
        return name_list
    low = {k: getattr(m, k) for m in f.metadata for k in ("ge", "gt") if hasattr(m, k)}
    if f.annotation is float:
        return positive_float
    if f.annotation is int:
        return nonneg_int if low.get("ge") == 0 else positive_int
    return None


def model_flags(p: argparse.ArgumentParser, model: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """A flag per field of ``model`` but NOT_FLAGS and ``skip``, its help and default the
    field's (argparse's default is None: only given flags reach the scenario); the fields."""
    made = []
    for name, f in model.model_fields.items():
        if name in NOT_FLAGS or name in skip:
            continue
        opts = [o for o in (SHORT.get(name), "--" + name.replace("_", "-")) if o]
        help_ = (f.description or "").replace("%", "%%")
        if f.default is not None:
            shown = ",".join(map(str, f.default)) if isinstance(f.default, list) else f.default
            help_ += f" (default {shown})"
        p.add_argument(*opts, dest=name, type=_argtype(name, f), default=None, help=help_)
        made.append(name)
    return made


def configure(p: argparse.ArgumentParser) -> None:
    from bench.probe.scenario import ProbeScenario

    p.add_argument("--out", type=out_dir, default=None,
                   help="run directory, new or empty (default: runs/<time>-probe)")
    p.set_defaults(probe_fields=model_flags(p, ProbeScenario))
    p.add_argument("--emulate", default=None, metavar="PROFILE",
                   help="emulate a cluster on this host: a profile (preset or file) pricing its "
                        "links, with --topology; a profile's slow: entries make a node or link slow")
    p.add_argument("--topology", default=None, help="the emulated cluster, e.g. 4x2 (with --emulate)")
    p.add_argument("--no-progress", action="store_true", help="no line per round")
    isolate.add_flag(p)


def scenario_of(args: argparse.Namespace) -> Any:
    """The flags as a validated probe scenario; ScenarioError (one line) when they are bad."""
    from bench.probe.scenario import ProbeScenario
    from bench.scenario_base import ScenarioError

    raw = given(args, args.probe_fields)
    if (args.emulate is None) != (args.topology is None):
        raise ScenarioError("--emulate PROFILE and --topology SPEC go together")
    if args.emulate is not None:
        raw["emulate"] = {"profile": args.emulate, "topology": args.topology}
    return validated(ProbeScenario, raw)


def given(args: argparse.Namespace, fields: list[str]) -> dict[str, Any]:
    """The flags of ``fields`` the user gave (their defaults are the scenario's)."""
    return {k: v for k in fields if (v := getattr(args, k)) is not None}


def validated(model: Any, raw: dict[str, Any]) -> Any:
    """``raw`` as a ``model`` scenario; ScenarioError (one line) when it is not one."""
    from pydantic import ValidationError

    from bench.scenario_base import ScenarioError, one_line

    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise ScenarioError(one_line(e)) from None


def run_kind(args: argparse.Namespace, command: str, scenario_of: Any, run: Any) -> int:
    """``run(args, scenario)`` with the flags' scenario; a bad one is a UsageError of
    ``command``."""
    from bench.scenario_base import ScenarioError

    with said(command, ScenarioError):
        sc = scenario_of(args)
    return int(run(args, sc))


def handle(args: argparse.Namespace) -> int:
    from bench.probe.launch import handle as run_probe

    return run_kind(args, "probe", scenario_of, run_probe)


register("probe", "latency and bandwidth between every pair of ranks; slow links and nodes "
                  "named by host", configure, handle,
         example="--world-size 4")
