"""A collective sweep spelled on the command line as nccl-tests and OSU spell it (docs/running.md,
"The axes as flags"): each flag sets one key of :class:`CollectiveScenario` (:data:`FLAGS`, the
one place the spelling is stated); the equivalent YAML is written into the run directory."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.argtypes import names
from bench.collective.scenario import ScenarioError, parse_scenario


def _ints(text: str) -> list[Any]:
    out: list[Any] = []
    for x in names(text):
        try:
            out.append(int(x))
        except ValueError:
            out.append(x)  # the model refuses it, naming the key
    return out


def _number(text: str) -> Any:
    try:
        return float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return text


def _flag(text: str) -> Any:
    return {"0": False, "1": True}.get(text.strip(), text)


def _algorithms(text: str) -> Any:
    return "all" if text.strip() == "all" else names(text)


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    key: tuple[str, ...]  # the scenario key it sets (nested: ("sizes", "min"))
    parse: Callable[[str], Any]
    help: str


FLAGS: tuple[Flag, ...] = (
    Flag(("-c", "--collectives"), ("collectives",), names, "collectives, comma-separated"),
    Flag(("-b", "--minbytes"), ("sizes", "min"), str, "smallest size (8, 1K, 64KiB)"),
    Flag(("-e", "--maxbytes"), ("sizes", "max"), str, "largest size (1M, 1GiB)"),
    Flag(("-f", "--stepfactor"), ("sizes", "factor"), _number, "size multiplier (default 2)"),
    Flag(("-n", "--nranks"), ("world_sizes",), _ints, "world sizes, comma-separated"),
    Flag(("-d", "--datatype"), ("dtypes",), names, "dtypes, comma-separated (float32, bf16, ...)"),
    Flag(("-o", "--op"), ("ops",), names, "reduction ops, comma-separated (sum, max, ...)"),
    Flag(("-a", "--algorithms"), ("algorithms",), _algorithms,
         "algorithms, comma-separated, or all (native: the vendor call)"),
    Flag(("-t", "--transports"), ("transports",), names, "transports, comma-separated (mpi, torch)"),
    Flag(("-w", "-x", "--warmup"), ("timing", "warmup"), _number, "warm-up iterations per case"),
    Flag(("-i", "--iters"), ("timing", "iters"), _number,
         "timed iterations per case (default: a time budget)"),
    Flag(("--check",), ("check",), _flag, "1: check every element after timing (default), 0: not"),
    Flag(("--name",), ("name",), str, "the run's scenario name (default: cli)"),
)


# Letters of nccl-tests that mean something else here (said by `run --help`; docs/running.md).
DIFFER = ("Letters that differ from nccl-tests: -n is the world sizes (nccl-tests: iterations), "
          "-c the collectives (nccl-tests: check), -i the timed iterations (nccl-tests: step "
          "bytes), -a the algorithms (nccl-tests: average mode), -t the transports (nccl-tests: "
          "threads per process). -g has no equivalent (one rank per GPU: -n); OSU's -m MIN:MAX "
          "is -b MIN -e MAX.")


def dest(flag: Flag) -> str:
    return "axis_" + "_".join(flag.key)


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("axes as nccl-tests and OSU spell them (a scenario without a file, "
                             "or over the file's keys)", DIFFER)
    for f in FLAGS:
        g.add_argument(*f.names, dest=dest(f), default=None, metavar="X", help=f.help)


def given(args: argparse.Namespace) -> list[Flag]:
    return [f for f in FLAGS if getattr(args, dest(f), None) is not None]


def scenario_from(raw: dict[str, Any] | None, args: argparse.Namespace, source: str) -> Any:
    """The scenario ``raw`` (a file's mapping, or ``None``: the defaults) with the flags given."""
    out: dict[str, Any] = dict(raw or {"name": "cli"})
    if raw is not None and out.get("kind", "collective") != "collective" and given(args):
        raise ScenarioError(f"{given(args)[0].names[-1]}: the axis flags set a collective "
                            f"scenario's keys; {source} is of kind {out['kind']!r}")
    for f in given(args):
        text = getattr(args, dest(f))
        node = out
        for k in f.key[:-1]:
            node[k] = dict(node[k]) if isinstance(node.get(k), dict) else {}
            node = node[k]
        node[f.key[-1]] = f.parse(text)
    sizes = out.get("sizes")
    if isinstance(sizes, dict) and "max" in sizes and "min" not in sizes:
        sizes["min"] = sizes["max"]
    if isinstance(sizes, dict) and "min" in sizes and "max" not in sizes:
        sizes["max"] = sizes["min"]
    try:
        return parse_scenario(out, source)
    except ScenarioError as e:
        spelled = ", ".join(f.names[-1] for f in given(args))
        raise ScenarioError(f"{e} (from {spelled})" if spelled else str(e)) from None
