"""What the accuracy benchmarks share: ``commbench`` commands run from this checkout, a fresh
output directory (``--out``, by default under runs/ named by time), and the load to print."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from bench.argtypes import OneLineParser, positive_int

ROOT = Path(__file__).resolve().parents[1]


def bench(who: str, *args: str) -> None:
    """``python -m bench ARGS`` from this checkout; a failure ends ``who`` with its last lines."""
    res = subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"{who}: {' '.join(args[:2])} failed ({res.returncode}): " + " | ".join(tail))


def fresh_dir(who: str, out: Path) -> Path:
    """``out`` resolved and created; refused when it already holds something."""
    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{who}: {out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    return out


def command_line(name: str, doc: str, count: str, default: int,
                 argv: list[str] | None) -> tuple[argparse.Namespace, Path]:
    """An accuracy benchmark's flags parsed: ``--COUNT N`` (its repeats) and ``--out DIR``, made
    fresh; returns (args, out)."""
    ap = OneLineParser(prog=f"python -m benchmarks.{name}", description=doc,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(f"--{count}", type=positive_int, default=default)
    add_out(ap, name.replace("_", "-"))
    args = ap.parse_args(argv)
    return args, fresh_dir(name, args.out)


T = TypeVar("T")


def each(n: int, noun: str, done: str, one: Callable[[int], T], t0: float) -> Iterator[T]:
    """``one(i)`` for i < n, each followed by a progress line (``# NOUN i DONE [seconds, load]``)."""
    for i in range(n):
        got = one(i)
        print(f"# {noun} {i} {done} [{time.monotonic() - t0:.0f} s, load {load()}]", flush=True)
        yield got


def add_out(ap: argparse.ArgumentParser, name: str) -> None:
    """``--out DIR``, by default ``runs/<time>-NAME``."""
    ap.add_argument("--out", type=Path,
                    default=Path(f"runs/{time.strftime('%Y%m%d-%H%M%S')}-{name}"))


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, for progress lines."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
