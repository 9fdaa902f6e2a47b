"""Hints for arguments a command does not take: the flags of nccl-tests and OSU that commbench
spells another way (docs/running.md, "The axes as flags"), else the nearest flag it does take."""

from __future__ import annotations

import argparse
import difflib

# Flags of the tools users come from, which the command line does not take, and what to use.
FOREIGN: dict[str, str] = {
    "-g": "nccl-tests' -g (GPUs per thread): commbench runs one rank per GPU, so -n sets the "
          "world size",
    "-m": "OSU's -m MIN:MAX (message sizes) is -b MIN -e MAX here",
    "-G": "nccl-tests' -G (CUDA graph launches) is the nccl-graph transport here: -t nccl-graph",
    "-N": "nccl-tests' -N (run cycles) has no flag: the scenario's timing.repetitions",
}


def command(name: str, known: list[str]) -> str | None:
    """The one-line error for a command ``name`` that is not one of ``known`` (None: it is)."""
    if name in known or name.startswith("-"):
        return None
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}? " if near else ""
    return f"unknown command {name!r} ({hint}commands: {', '.join(known)})"


def unknown(extras: list[str], parser: argparse.ArgumentParser) -> str:
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
