"""``commbench import TOOL FILE --out DIR``: another tool's results as a commbench run."""

from __future__ import annotations

import argparse
import sys

from bench.argtypes import UsageError, in_path, positive_int, world_size
from bench.commands import new_run_dir, register
from bench.replay.formats import FORMATS
from bench.store.importers import IMPORTERS, Options, ParseError
from bench.store.importers.common import write_import
from bench.store.importers.detect import canonical
from kernels.collective import names


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", choices=[*IMPORTERS.names(), *FORMATS.names()],
                   help="the tool that wrote FILE; a trace format (torch-profiler, "
                        "flight-recorder, nccl-coll) makes a replay scenario (docs/replay.md)")
    p.add_argument("file", type=in_path, nargs="+",
                   help="the tool's output (text, or nccl-tests -J JSON); a trace: every "
                        "rank's file")
    p.add_argument("--out", type=in_path, default=None,
                   help="run directory to create (default: runs/<time>-<tool>); a trace: the "
                        "scenario file to write (default: runs/<time>-<tool>.yaml)")
    p.add_argument("--world-size", type=world_size, default=None,
                   help="ranks that ran (required for OSU, which does not print it; for "
                        "nccl-tests it overrides the '# Rank' lines)")
    p.add_argument("--ranks-per-node", type=positive_int, default=None,
                   help="ranks per node (default: from the output, else all on one node)")
    p.add_argument("--collective", default=None, metavar="NAME",
                   help="the collective FILE measured, overriding what the log says (its "
                        "'Collective test starting' line or title, command line, column header "
                        "or file name); any alias, e.g. allgather")


def handle(args: argparse.Namespace) -> int:
    if args.tool in FORMATS:
        from bench.replay.importing import import_trace

        return import_trace(args.tool, args.file, args.out)
    if len(args.file) > 1:
        raise UsageError(f"{args.tool}: one FILE, got {len(args.file)}", "import")
    args.file = args.file[0]
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file; name a directory to write", "import")
    out = new_run_dir(args.out, args.tool, "import", f"{args.file}: ")
    if args.collective is not None and canonical(args.collective) is None:
        raise UsageError(f"{args.file}: --collective {args.collective!r}: unknown collective; "
                         f"valid: {', '.join(names())}", "import")
    try:
        text = args.file.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"{args.file}: {e.strerror or e}", "import") from None
    opts = Options(args.world_size, args.ranks_per_node, args.collective, args.file.name)
    try:
        imported = IMPORTERS.get(args.tool).parse(text, opts)
    except ParseError as e:
        raise UsageError(e.where(args.file), "import") from None
    try:
        n = write_import(out, args.tool, args.file, imported)
    except OSError as e:
        raise UsageError(f"{args.file}: writing {out}: {e.strerror or e}", "import") from None
    for w in imported.warnings:
        print(f"commbench: import: {args.file}: {w}", file=sys.stderr)
    skipped = (f"; skipped {imported.skipped} lines that are neither table nor {args.tool} output"
               if imported.skipped else "")
    print(f"# {n} records from {args.file}{skipped}", file=sys.stderr)
    print(out)
    return 0


register("import", "turn nccl-tests or OSU output into a run, or a job's traces into a replay",
         configure, handle, example="nccl-tests {log} --out imported", offline=True)
