"""Every command line commbench has, found from the parsers themselves, and the fuzzing of its
flags: each flag given bad values on top of a base command line that parses, each parse held to
"parses, or exits 2 with one line on stderr" (never a traceback, never another exit code).

``python -m tests.helpers.parsers`` fuzzes commbench's own benchmark scripts in a process of its
own (some import mpi4py.MPI, which would initialise MPI in the test process) and prints the
failures as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import pkgutil
import sys
from collections.abc import Iterator
from typing import Any

BAD = ("0", "-1", "-0", "nan", "inf", "-inf", "1e400", "", " ", "abc", "1,,2", ",", "2,2",
       "99999999999999999999999999", "0.0", "1.5", "-1e-9", "8x", "1e9999B", "\x00", "..", "1..0")
SCRIPTS = ("benchmarks", "bench.commands.env")


def _subcommands(name: str, parser: argparse.ArgumentParser,
                 ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser``, or each of its actions' parsers where it has actions (``testbed up``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield name, parser
    for action in subs:
        for sub, p in action.choices.items():
            yield from _subcommands(f"{name} {sub}", p)


def top_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every registered ``commbench`` command."""
    from bench.cli import build_parser

    top = build_parser()
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def command_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every command line to fuzz: each command's, or each of its actions'
    for a command with actions (``testbed up``)."""
    for name, p in top_parsers():
        yield from _subcommands(name, p)


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def script_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(module, parser) of every benchmark script: its ``main`` run until it parses its flags."""
    import mpi4py

    mpi4py.rc.initialize = False  # importing mpi4py.MPI must not start MPI here
    from bench.argtypes import OneLineParser

    mods: list[str] = []
    for name in SCRIPTS:
        mod = importlib.import_module(name)
        if hasattr(mod, "__path__"):
            mods += [f"{name}.{m.name}" for m in pkgutil.iter_modules(mod.__path__)]
        else:
            mods.append(name)
    original = OneLineParser.parse_args

    def capture(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        raise _Captured(self)

    OneLineParser.parse_args = capture  # type: ignore[method-assign,assignment]
    try:
        for name in mods:
            main = getattr(importlib.import_module(name), "main", None)
            if main is None:
                continue
            argv = sys.argv
            try:
                sys.argv = [name]
                main()
            except _Captured as c:
                yield name, c.parser
            finally:
                sys.argv = argv
    finally:
        OneLineParser.parse_args = original  # type: ignore[method-assign]


def _value(action: argparse.Action) -> str:
    if action.choices:
        return str(next(iter(action.choices)))
    return str(getattr(action.type, "example", "x"))


def base_argv(parser: argparse.ArgumentParser) -> list[str]:
    """A command line the parser takes: its required positionals and options, one of each
    required group."""
    out: list[str] = []
    grouped = {id(a) for g in parser._mutually_exclusive_groups for a in g._group_actions}
    for g in parser._mutually_exclusive_groups:
        if g.required:
            a = g._group_actions[0]
            out += [a.option_strings[-1]] + ([] if a.nargs == 0 else [_value(a)])
    for a in parser._actions:
        if id(a) in grouped or isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if not a.option_strings and a.nargs not in ("?", "*"):
            out.append(_value(a))
        elif a.option_strings and a.required:
            out += [a.option_strings[-1], _value(a)]
    return out


def flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take a value (the fuzz targets)."""
    return [a for a in parser._actions if a.option_strings and a.nargs != 0
            and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[int, str]:
    """(0, '') when it parses, else (exit code, stderr); another exception propagates."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as e:
            return int(e.code or 0), err.getvalue()
    return 0, ""


def check(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """Why ``argv`` broke the rule, or None."""
    try:
        code, err = parse(parser, argv)
    except Exception as e:  # a traceback for the user
        return f"{argv}: {type(e).__name__}: {e}"
    lines = err.strip().splitlines()
    if code == 0:
        return None
    if code != 2 or len(lines) != 1 or not lines[0].startswith("commbench: "):
        return f"{argv}: exit {code}, stderr {err!r}"
    return None


def fuzz_all(parsers: list[tuple[str, argparse.ArgumentParser]]) -> tuple[int, list[str]]:
    """Every flag of every parser with every :data:`BAD` value: (flags, failures)."""
    failures, n = [], 0
    for name, parser in parsers:
        base = base_argv(parser)
        if (why := check(parser, base)) or parse(parser, base)[0] != 0:
            failures.append(f"{name}: the base command line does not parse: {why or base}")
            continue
        for action in flags(parser):
            n += 1
            for bad in BAD:
                why = check(parser, [*base, action.option_strings[-1], bad])
                if why:
                    failures.append(f"{name} {why}")
    return n, failures


if __name__ == "__main__":
    found = list(script_parsers())
    count, failed = fuzz_all(found)
    raw = [f"{m} {a.option_strings[-1]}" for m, p in found for a in flags(p) if a.type in (int, float)]
    print(json.dumps({"flags": count, "scripts": len(found), "failures": failed, "raw": raw}))
