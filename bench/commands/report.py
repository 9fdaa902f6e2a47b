"""``commbench report RUN [RUN ...] -o FILE``: one self-contained HTML report."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from bench.argtypes import UsageError, in_path, nonneg_int, out_file, positive_int
from bench.commands import register
from bench.store.records import StoreError, skipping_bad_lines


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", type=in_path, nargs="+", help="run directories (the first is the baseline "
                                                      "of the comparison table)")
    p.add_argument("-o", "--output", type=out_file, default=None,
                   help="HTML file (default: RUN/report.html for one run; for several, "
                        "report-A+B+....html beside the first run)")
    p.add_argument("--max-rows", type=positive_int, default=2000,
                   help="table rows written inline (default 2000)")
    from reports.sections import Options  # the one place the default is stated

    p.add_argument("--max-figures", type=nonneg_int, default=Options.max_panels,
                   help=f"figure panels per section (default {Options.max_panels})")
    p.add_argument("--strict", action="store_true",
                   help="refuse a run whose results.jsonl has a bad line (default: skip it, say so)")


def handle(args: argparse.Namespace) -> int:
    from reports.render import render_report
    from reports.sections import Options

    out = args.output or (args.runs[0] / "report.html" if len(args.runs) == 1 else
                          args.runs[0].parent / f"report-{'+'.join(r.name for r in args.runs)[:120]}.html")
    for run in args.runs:
        if not run.is_dir():
            raise UsageError(f"{run}: no such run directory", "report")
    if args.max_rows < 1 or args.max_figures < 1:
        raise UsageError("--max-rows and --max-figures must be >= 1", "report")
    skipped: dict[tuple[Path, int], str] = {}  # the reader may pass a run more than once

    def skip(path: Path, line: int, why: str) -> None:
        skipped[(path, line)] = why

    try:
        with contextlib.nullcontext() if args.strict else skipping_bad_lines(skip):
            path = render_report(args.runs, out, Options(max_panels=args.max_figures,
                                                         max_rows=args.max_rows))
    except StoreError as e:
        raise UsageError(f"{e}{' (--strict)' if args.strict else ''}", "report") from None
    for (where, line), why in sorted(skipped.items()):
        print(f"commbench: report: skipped {where}:{line}: {why}", file=sys.stderr)
    print(path)
    return 0


register("report", "write an HTML report of one or more runs", configure, handle,
         example="{run} --output report.html", offline=True)
