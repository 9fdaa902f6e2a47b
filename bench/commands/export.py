"""``commbench export RUN --format pytest-benchmark|csv|parquet [-o FILE]``."""

from __future__ import annotations

import argparse
import sys

from bench.argtypes import UsageError, in_path, out_file
from bench.commands import register
from bench.store.export import FORMATS, export


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", type=in_path, help="run directory")
    p.add_argument("--format", required=True, choices=FORMATS.names(), help="output format")
    p.add_argument("-o", "--output", type=out_file, default=None,
                   help="output file (default: RUN/export.<suffix>)")


def handle(args: argparse.Namespace) -> int:
    if not args.run.is_dir():
        raise UsageError(f"{args.run}: no such run directory", "export")
    try:
        out, n = export(args.run, args.format, args.output)
    except OSError as e:  # --output not writable
        raise UsageError((str(e).splitlines() or [""])[0], "export") from None
    print(f"# {n} {'cases' if args.format == 'pytest-benchmark' else 'records'} written",
          file=sys.stderr)
    print(out)
    return 0


register("export", "export a run as pytest-benchmark JSON, CSV or Parquet", configure, handle,
         example="{run} --format csv --output run.csv", offline=True)
