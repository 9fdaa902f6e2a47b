"""Command-line values, checked where they are parsed: every flag takes one of these types, so bad
numbers, sizes, lists and paths are refused by argparse in one line with exit 2.
:class:`OneLineParser` makes argparse's error one line; every other error the user can fix is a
:class:`CommbenchError`, raised where it is detected and said by ``bench/cli.py`` alone."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from bench.units import parse_size

MAX_INT = 1 << 40  # larger counts are typos (a world of 2^40 ranks, 2^40 iterations)
MAX_LIST = 4096  # entries one comma-separated list may hold
MAX_WORLD = 1 << 20  # ranks in one job: the largest training clusters hold ~10^5 accelerators


class CommbenchError(ValueError):
    """Bad input the user can fix, raised where it is detected: ``bench/cli.py`` says its first
    line as ``commbench: <command>: <cause>`` and exits 2. Anything else a command raises is a
    bug and stays a traceback, so a computation is never wrapped to turn its errors into this.
    A ValueError, so code that tells a bad value from a good one by ValueError still does."""


class UsageError(CommbenchError):
    """A :class:`CommbenchError` whose line is whole: ``<command>: <cause>``, or without
    ``command`` a cause that names its own source (a scenario file, a run directory)."""

    def __init__(self, cause: str, command: str = "") -> None:
        super().__init__(f"{command}: {cause}" if command else cause)


def names(text: str) -> list[str]:
    """A comma-separated list of names, commas inside parentheses kept: a collective's
    arguments (``alltoallv(zipf,s=1.2),all_reduce``) stay one name."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [x.strip() for x in [*out, cur] if x.strip()]


def world_sizes_arg(args: argparse.Namespace) -> tuple[int, ...]:
    """``--world-sizes`` (checked where parsed: positive, none twice), ``()`` when not given."""
    return tuple(args.world_sizes or ())


class OneLineParser(argparse.ArgumentParser):
    """argparse, but its errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        # "commbench run" says "commbench: run: ...", "commbench" itself "commbench: ..."; a value
        # echoed back keeps its control characters escaped (a \r in it would break the line)
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        self.exit(2, f"commbench: {UsageError(message, self.prog.removeprefix('commbench').strip())}\n")


def _typed(name: str, example: str, fn: Callable[[str], Any]) -> Callable[[str], Any]:
    """``fn`` with argparse's name for messages and a valid ``example`` (the fuzz test's base)."""
    fn.__name__ = name
    fn.example = example  # type: ignore[attr-defined]
    return fn


def _number(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number ({what})") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number ({what})")
    return x


def _integer(text: str, lo: int, what: str, hi: float = math.inf) -> int:
    if not re.fullmatch(r"\s*[-+]?\d+\s*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ({what})")
    n = int(text)
    if n > MAX_INT:
        raise argparse.ArgumentTypeError(f"{text!r}: too large (at most 2^40)")
    if n < lo or n > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: {what}")
    return n


def ranged_float(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False,
                 example: str = "1") -> Callable[[str], float]:
    """A finite number in [lo, hi] (open ends where said)."""
    what = (f"a number {'>' if lo_open else '>='} {lo:g}" if hi == math.inf else
            f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}")

    def parse(text: str) -> float:
        x = _number(text, what)
        if x < lo or x > hi or (lo_open and x == lo) or (hi_open and x == hi):
            raise argparse.ArgumentTypeError(f"{text!r}: {what}")
        return x

    return _typed("number", example, parse)


positive_int = _typed("positive integer", "2", lambda t: _integer(t, 1, "a whole number >= 1"))
nonneg_int = _typed("integer", "0", lambda t: _integer(t, 0, "a whole number >= 0"))
positive_float = ranged_float(0, math.inf, lo_open=True)
nonneg_float = ranged_float(0, math.inf, example="0")
probability = ranged_float(0, 1, lo_open=True, hi_open=True, example="0.05")
percent = ranged_float(0, 100, hi_open=True, example="5")


def _size(text: str) -> int:
    try:
        n = parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n > MAX_INT:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes up to {MAX_INT} bytes (1 TiB)")
    return n


size = _typed("size", "64KiB", _size)


def _list_of(item: Callable[[str], Any], name: str, example: str, unique: bool = True
             ) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of {name}, "
                                             "none empty")
        if len(parts) > MAX_LIST:
            raise argparse.ArgumentTypeError(f"{len(parts)} entries: at most {MAX_LIST}")
        out = [item(p) for p in parts]
        if unique and len(set(out)) != len(out):
            raise argparse.ArgumentTypeError(f"{text!r}: an entry given twice")
        return out

    return _typed(f"list of {name}", example, parse)


int_list = _list_of(positive_int, "positive whole numbers", "2,4")


world_size = _typed("world size", "8",
                    lambda t: _integer(t, 1, "a world size from 1 to 2^20 ranks", MAX_WORLD))
world_list = _list_of(world_size, "world sizes (1 to 2^20 ranks)", "2,4")
name_list = _list_of(str, "names", "ring")

_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def param_count(text: str) -> int:
    """A parameter count: ``7.5B``, ``70b``, ``350M``, ``1.3e9`` (B and G: 1e9)."""
    t = text.upper() if text[-1:].isalpha() else text
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([KMBGT]?)\s*", t)
    if not m:
        raise argparse.ArgumentTypeError(f"{t!r} is not a count (7.5B, 1.3e9, 350M)")
    n = float(m.group(1)) * _SCALE[m.group(2)]
    if not math.isfinite(n) or n < 1 or n > 1e15:
        raise argparse.ArgumentTypeError(f"{t!r}: a count from 1 to 1e15")
    return round(n) if m.group(2) else int(n)


def _span(text: str) -> tuple[int, int]:
    parts = text.split("..")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN..MAX, two sizes (4B..16MiB)")
    lo, hi = (_size(p) for p in parts)
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: MIN is above MAX")
    return lo, hi


size_span = _typed("size range", "4B..1MiB", _span)


def _count_text(text: str) -> str:
    param_count(text)
    return text


params = _typed("count", "7B", _count_text)  # the text, checked: its readers parse it (param_count)


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: a blank path")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text!r}: a path cannot hold a NUL byte")
    return Path(text)


def _out_file(text: str) -> Path:
    p = _path(text)
    if p.is_dir() or text.endswith("/") or p.name in ("", ".", ".."):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; name a file to write")
    return p


def _out_dir(text: str) -> Path:
    p = _path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file; name a directory to write")
    return p


in_path = _typed("path", "x", _path)  # a file or directory to read
out_file = _typed("file", "out.txt", _out_file)  # a file to write (not a directory)
out_dir = _typed("directory", "out", _out_dir)  # a directory to write (not a file)
