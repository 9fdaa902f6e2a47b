"""CLI subcommands by name: each module of this package (or of a ``COMMBENCH_PLUGINS`` package)
calls :func:`register` with its parser and handler; discovered, so a new command is a new file.
A handler raises a :class:`bench.argtypes.CommbenchError` for input the user can fix, where it
is detected (one line, exit 2); anything else stays a traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.argtypes import UsageError
from kernels.registry import Registry

NEEDS_TORCH = "needs torch (pip install 'commbench[training]'): "
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


def needs_torch(e: ImportError, command: str) -> UsageError:
    """A missing torch (or another optional package) for ``command``, said in one line."""
    return UsageError(NEEDS_TORCH + (str(e).splitlines() or [""])[0], command)


def new_run_dir(out: Path | None, name: str, command: str, where: str = "") -> Path:
    """``out``, or ``runs/<time>-<name>``; a UsageError where it already holds results."""
    from bench.store.resume import default_run_dir

    out = out or default_run_dir(name)
    if (out / "results.jsonl").exists():
        raise UsageError(f"{where}{out} already holds results; choose another --out", command)
    return out
