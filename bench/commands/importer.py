"""``commbench import TOOL FILE --out DIR``: another tool's results as a commbench run."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import sys
from pathlib import Path

from bench.commands import register
from bench.importers import IMPORTERS, MODULES, Options, ParseError
from bench.importers.common import write_import


def _names() -> list[str]:
    for mod in MODULES:
        importlib.import_module(mod)
    return IMPORTERS.names()


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", choices=_names(), help="the tool that wrote FILE")
    p.add_argument("file", type=Path, help="the tool's output (text, or nccl-tests -J JSON)")
    p.add_argument("--out", type=Path, default=None,
                   help="run directory to create (default: runs/<time>-<tool>)")
    p.add_argument("--world-size", type=int, default=None,
                   help="ranks that ran (required for OSU, which does not print it)")
    p.add_argument("--ranks-per-node", type=int, default=None,
                   help="ranks per node (default: from the output, else all on one node)")


def handle(args: argparse.Namespace) -> int:
    out = args.out or Path("runs") / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{args.tool}"
    if (out / "results.jsonl").exists():
        print(f"commbench: import: {out} already holds results; choose another --out",
              file=sys.stderr)
        return 2
    for flag, v in (("--world-size", args.world_size), ("--ranks-per-node", args.ranks_per_node)):
        if v is not None and v < 1:
            print(f"commbench: import: {flag} must be >= 1", file=sys.stderr)
            return 2
    try:
        text = args.file.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        print(f"commbench: import: {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        imported = IMPORTERS.get(args.tool).parse(text, Options(args.world_size,
                                                                args.ranks_per_node))
    except ParseError as e:
        print(f"commbench: import: {e.where(args.file)}", file=sys.stderr)
        return 2
    n = write_import(out, args.tool, args.file, imported)
    print(f"# {n} records from {args.file}", file=sys.stderr)
    print(out)
    return 0


register("import", "turn nccl-tests or OSU output into a commbench run", configure, handle)
