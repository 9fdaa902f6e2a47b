"""``commbench`` command line: subcommands come from the :mod:`bench.commands` registry."""

from __future__ import annotations

import argparse
import os
import sys

from bench.argtypes import OneLineParser, UsageError, say


def build_parser() -> argparse.ArgumentParser:
    from bench.commands import COMMANDS  # discovered: a new command is a new file there

    parser = OneLineParser(
        prog="commbench",
        description="Communication benchmarks for distributed deep learning.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS.names():
        cmd = COMMANDS.get(name)
        p = sub.add_parser(name, help=cmd.help, description=cmd.help,
                           epilog=cmd.example_for_help())
        cmd.configure(p)
        p.set_defaults(_handler=cmd.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    from bench.launch.signals import arm_if_rank_of_users_job

    # Before numpy, BLAS or MPI start threads (the commands import them): a rank of the user's
    # own MPI job takes SIGTERM/SIGHUP in a thread of its own, so a time limit still leaves an
    # interrupted run (bench/launch/signals.py).
    arm_if_rank_of_users_job(sys.argv if argv is None else ["commbench", *argv], os.environ)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0), or a bad flag said in one line (2)
        return int(e.code or 0)
    try:
        return int(args._handler(args))
    except UsageError as e:
        return say(e)
    except KeyboardInterrupt:
        print("commbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `commbench list | head`: the reader left; nothing to say
        sys.stderr.close()
        return 141


if __name__ == "__main__":
    sys.exit(main())
