"""``commbench`` command line: subcommands come from the :mod:`bench.commands` registry."""

from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.util
import os
import sys
from typing import TYPE_CHECKING

from bench.argtypes import CommbenchError, OneLineParser, UsageError
from kernels.registry import UnknownName

if TYPE_CHECKING:
    from bench.commands import Command


def _alone(name: str | None) -> Command | None:
    """The command ``name`` from its own module, no other imported: the others' imports would
    cost every commbench process, each rank included, a few hundred ms. None where no such module
    registers it (``list``, ``import``, a plugin's): then every command is discovered."""
    from bench.commands import COMMANDS

    if not name or name.startswith("-") or not name.isidentifier():
        return None
    module = f"bench.commands.{name}"
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except ImportError:
        return None
    importlib.import_module(module)
    return COMMANDS.registered(name)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command`` (:func:`_alone`)."""
    from bench.commands import COMMANDS  # discovered: a new command is a new file there

    parser = OneLineParser(
        prog="commbench",
        description="Communication benchmarks for distributed deep learning.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    alone = _alone(command)
    for cmd in [alone] if alone else [COMMANDS.get(n) for n in COMMANDS.names()]:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help,
                           epilog=cmd.example_for_help())
        cmd.configure(p)
        p.set_defaults(_handler=cmd.handler, _parser=p)
    return parser


def bad_input(e: Exception, command: str) -> int:
    """The one way bad input reaches the user: one line on stderr, naming ``command`` unless the
    error's line is whole (:class:`UsageError`); the exit code, 2."""
    cause = (str(e).splitlines() or [""])[0]
    sys.stderr.write(f"commbench: {cause if isinstance(e, UsageError) else f'{command}: {cause}'}\n")
    return 2


# Flags of the tools users come from (nccl-tests, OSU) that the command line spells another way
# (docs/running.md, "The axes as flags"), and what to use.
FOREIGN: dict[str, str] = {
    "-g": "nccl-tests' -g (GPUs per thread): commbench runs one rank per GPU, so -n sets the "
          "world size",
    "-m": "OSU's -m MIN:MAX (message sizes) is -b MIN -e MAX here",
    "-G": "nccl-tests' -G (CUDA graph launches) is the nccl-graph transport here: -t nccl-graph",
    "-N": "nccl-tests' -N (run cycles) has no flag: the scenario's timing.repetitions",
}


def unknown_command(name: str, known: list[str]) -> str | None:
    """The one-line error for a command ``name`` that is not one of ``known`` (None: it is)."""
    if name in known or name.startswith("-"):
        return None
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}? " if near else ""
    return f"unknown command {name!r} ({hint}commands: {', '.join(known)})"


def unknown_flags(extras: list[str], parser: argparse.ArgumentParser) -> str:
    """The one-line error for ``extras`` that ``parser`` did not take, with a hint where one fits."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    flags = [a.split("=", 1)[0] for a in extras if a.startswith("-")]
    for flag in flags:
        if flag in FOREIGN:
            return f"{message} ({FOREIGN[flag]})"
    known = [o for action in parser._actions for o in action.option_strings]
    for flag in flags:
        if near := difflib.get_close_matches(flag, known, n=1, cutoff=0.6):
            return f"{message} (did you mean {near[0]}?)"
    return message


def main(argv: list[str] | None = None) -> int:
    from bench.launch.signals import arm_if_rank_of_users_job

    # Before numpy, BLAS or MPI start threads (the commands import them): a rank of the user's
    # own MPI job takes SIGTERM/SIGHUP in a thread of its own, so a time limit still leaves an
    # interrupted run (bench/launch/signals.py).
    args_in = sys.argv[1:] if argv is None else argv
    arm_if_rank_of_users_job(["commbench", *args_in], os.environ)
    if not args_in:  # bare `commbench`: the commands, not an error about a missing one
        build_parser().print_help()
        return 0
    try:
        parser = build_parser(args_in[0])
        from bench.commands import COMMANDS

        # registered(): no discovery, so a rank's `commbench run` still imports run's module alone
        if COMMANDS.registered(args_in[0]) is None and (
                why := unknown_command(args_in[0], COMMANDS.names())) is not None:
            parser.error(why)
        args, extras = parser.parse_known_args(args_in)
        if extras:  # said by the command's own parser: `commbench: run: ...`, with a hint
            args._parser.error(unknown_flags(extras, args._parser))
    except SystemExit as e:  # --help (0), or a bad flag said in one line (2)
        return int(e.code or 0)
    try:
        return int(args._handler(args))
    except (CommbenchError, UnknownName) as e:  # bad input; a bug stays a traceback
        return bad_input(e, args.command)
    except KeyboardInterrupt:
        print("commbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `commbench list | head`: the reader left; nothing to say
        sys.stderr.close()
        return 141


if __name__ == "__main__":
    sys.exit(main())
