"""CLI subcommands by name: each module of this package (or of a ``COMMBENCH_PLUGINS`` package)
calls :func:`register` with its parser and handler; discovered, so a new command is a new file.
A handler raises :class:`bench.argtypes.UsageError` for input the user can fix (one line, exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from kernels.registry import Registry

# placeholders an example may hold: what each stands for (shown by --help, filled by the tests)
PLACEHOLDERS = {"{run}": "RUN_DIR", "{measured}": "MEASURED_RUN_DIR", "{log}": "NCCL_TESTS_LOG"}


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]
    # a command line after the name that ends with a result; {run} is a run directory (any),
    # {measured} one that commbench measured, {log} an nccl-tests log. --help shows it; tests run
    # it, and fuzz every flag on top of it
    example: str
    # the example starts no job and no child process, so every flag's values are fuzzed through
    # the handler itself, not only the parser (a command that launches ranks is fuzzed at parse)
    offline: bool = False
    results: tuple[int, ...] = (0,)  # exit codes that are a result (compare: 1, a regression)

    def example_for_help(self) -> str:
        line = self.example
        for mark, name in PLACEHOLDERS.items():
            line = line.replace(mark, name)
        return f"example: commbench {self.name} {line}".rstrip()


COMMANDS: Registry[Command] = Registry("command", ("bench.commands",))


def register(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             handler: Callable[[argparse.Namespace], int], *, example: str,
             offline: bool = False, results: tuple[int, ...] = (0,)) -> None:
    COMMANDS.add(name, Command(name, help, configure, handler, example, offline, results))
