"""``commbench`` command line: subcommands come from the :mod:`bench.commands` registry."""

from __future__ import annotations

import argparse
import importlib
import sys

from bench.commands import COMMANDS

# Modules that register subcommands; a new command is a new module named here.
COMMAND_MODULES = ("bench.commands.run", "bench.commands.listing", "bench.commands.report",
                   "bench.commands.compare", "bench.commands.memory", "bench.commands.importer",
                   "bench.commands.export", "bench.commands.env")


class UsageError(Exception):
    """Bad input the user can fix; printed as one line, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    for mod in COMMAND_MODULES:
        importlib.import_module(mod)
    parser = argparse.ArgumentParser(
        prog="commbench",
        description="Communication benchmarks for distributed deep learning.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS.names():
        cmd = COMMANDS.get(name)
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.configure(p)
        p.set_defaults(_handler=cmd.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._handler(args))
    except UsageError as e:
        print(f"commbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("commbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `commbench list | head`: the reader left; nothing to say
        sys.stderr.close()
        return 141


if __name__ == "__main__":
    sys.exit(main())
