"""CLI subcommands by name: each module calls :func:`register` with its parser and handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from kernels.registry import Registry


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]


COMMANDS: Registry[Command] = Registry("command")


def register(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             handler: Callable[[argparse.Namespace], int]) -> None:
    COMMANDS.add(name, Command(name, help, configure, handler))
